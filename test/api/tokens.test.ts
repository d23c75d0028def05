import { expect } from 'chai'
import { createApp } from '../../src/api/server/app.js'
import type { ApiServices } from '../../src/api/server/services.js'
import { createTokenApi } from '../../src/node/tokens/token-api.js'
import { TwoStepEngine } from '../../src/node/signing/two-step.js'
import { ErrorCode, RbtError } from '../../src/util/errors.js'
import { tokenEnv, type TokenEnv } from '../unit/tokens/helpers.js'
import { unusedIdentity } from './stub-identity.js'
import { unusedConsensus } from './stub-consensus.js'

const PASSWORD = 'pw'

describe('api: token and balance routes', function () {
  this.timeout(30_000)
  let env: TokenEnv
  let engine: TwoStepEngine
  let did: string
  let app: ReturnType<typeof createApp>

  before(async () => {
    env = await tokenEnv()
    did = env.ring.newDid()
    engine = new TwoStepEngine({ sweepIntervalMs: 0 })
    // identity for one local DID whose key opens with PASSWORD (checked through the engine prompt)
    const identity = {
      record: async (d: string) => d === did ? { type: 0 } : undefined,
      signerFor: async (d: string, prompt: Parameters<typeof engine.start>[2] extends (p: infer P) => unknown ? P : never) => {
        let open = false
        return {
          pvtSign: async (m: string | Uint8Array) => {
            if (!open) {
              const ans = await (prompt as unknown as (r: unknown, o: unknown) => Promise<{ password?: string }>)(
                { did: d, mode: 0, kind: 'password', hash: null, onlyPrivKey: false },
                { validate: (a: { password?: string }) => { if (a.password !== PASSWORD) throw new RbtError(ErrorCode.WRONG_PASSWORD, 'wrong password') } })
              open = ans.password === PASSWORD
            }
            return new Uint8Array(Buffer.from(env.ring.sign(d, typeof m === 'string' ? m : Buffer.from(m).toString('latin1')), 'hex'))
          }
        }
      }
    }
    const stub = unusedIdentity()
    const services: ApiServices = {
      node: { status: () => ({}) as never, startCore: async () => '', requestShutdown: () => {}, peerId: () => '', ping: async () => ({ rttMs: 0, message: '' }), addPeer: async () => {} },
      bootstrap: { list: async () => [], add: async () => [], remove: async () => [], removeAll: async () => [] },
      identity: stub.identity,
      signing: { complete: async (id, ans) => await engine.complete(id, ans), cancel: async (id) => { engine.cancel(id) } },
      tokens: createTokenApi(env.service, identity as never, engine),
      ...unusedConsensus()
    }
    app = createApp(services, { version: 't' })
  })
  after(async () => { engine.stop(); await env.close() })

  const json = async (res: Response): Promise<{ status: boolean, message: string, result: any, [k: string]: unknown }> => await res.json() as never
  const post = async (path: string, body: unknown): Promise<Response> => await app.request(path, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } })

  it('mints through the two-step flow; a wrong password keeps the challenge open', async () => {
    const first = await json(await post('/svc/v1/tokens/generate_local_rbt', { did, number_of_tokens: 4, start_index: 0 }))
    expect(first).to.deep.include({ status: true, message: 'Password needed' })
    expect(first.result).to.include({ mode: 0, hash: null, only_priv_key: false })
    const wrong = await post('/svc/v1/signature', { id: first.result.id, password: 'nope' })
    expect((await json(wrong)).status).to.equal(false)
    const done = await json(await post('/svc/v1/signature', { id: first.result.id, password: PASSWORD }))
    expect(done.message).to.equal('Local RBT tokens generated successfully')
    expect(done.result.token_ids).to.have.length(4)
  })

  it('answers balances in the reference shapes', async () => {
    const all = await json(await app.request(`/svc/v1/dids/${did}/balances`))
    expect(all).to.deep.equal({ status: true, message: 'Got account info successfully', result: { did, rbt_balance: [{ balance: 4, locked: 0, pledged: 0, pinned: 0 }], ft_balance: [], nft_balance: [] } })
    expect((await json(await app.request(`/svc/v1/dids/${did}/balances/rbt`))).result).to.deep.equal({ balance: 4, locked: 0, pledged: 0, pinned: 0 })
    expect(await json(await app.request(`/svc/v1/dids/${did}/balances/ft`))).to.deep.equal({ status: true, message: 'No FTs found', result: [] })
    expect((await json(await app.request(`/svc/v1/dids/${did}/balances/nft`))).result).to.deep.equal([])
    const legacy = await json(await app.request(`/api/get-account-info?did=${did}`))
    expect(legacy.account_info).to.deep.equal([{ did, did_type: 0, rbt_amount: 4, pledged_rbt: 0, locked_rbt: 0, pinned_rbt: 0 }])
    const list = await json(await app.request(`/svc/v1/tokens?type=rbt&did=${did}`))
    expect(list.message).to.equal('Got all tokens')
    expect(list.result).to.have.length(4)
    expect(list.result[0]).to.include({ token_status: 'Free', token_value: 1, did, token_type: 3 })
    const chain = await json(await app.request(`/svc/v1/tokens/${list.result[0].token_id as string}/chain`))
    expect(chain.result.blocks).to.have.length(1)
    expect(chain.result.blocks[0]).to.include({ number: 0, type: '05', owner: did })
  })

  it('rejects bad input with clear messages', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ did: 'bafybmiNOT', number_of_tokens: 1 }, /Invalid DID/],
      [{ did, number_of_tokens: 0 }, /whole number and greater than 0/],
      [{ did, number_of_tokens: -3 }, /whole number and greater than 0/],
      [{ did, number_of_tokens: 1.5 }, /whole number and greater than 0/],
      [{ did, number_of_tokens: '2' }, /number_of_tokens/],
      [{ did }, /number_of_tokens is required/],
      [{ did, number_of_tokens: 1, start_index: -1 }, /start_index/],
      [{ did, number_of_tokens: 1, start_index: 0 }, /already minted/],
      [{ did: 'bafybmi' + 'c'.repeat(52), number_of_tokens: 1 }, /DID does not have an access/]
    ]
    for (const [body, re] of cases) {
      const res = await post('/svc/v1/tokens/generate_local_rbt', body)
      const e = await json(res)
      expect(e.status, JSON.stringify(body)).to.equal(false)
      expect(e.message, JSON.stringify(body)).to.match(re)
    }
    expect((await json(await app.request('/svc/v1/dids/nope/balances'))).message).to.equal('Invalid DID')
    expect((await json(await app.request(`/svc/v1/tokens?type=gold&did=${did}`))).message).to.match(/Invalid token type/)
    expect((await json(await app.request('/svc/v1/tokens/QmUeBM2pNTbyYZ4LrsCNHb3hUTpBwYgW7XHrmJucy9cKvy/chain'))).message).to.match(/not known/)
    expect((await json(await app.request('/svc/v1/tokens/bad/chain'))).message).to.match(/Invalid token id/)
    expect((await json(await app.request('/api/get-account-info?did=x'))).status).to.equal(false)
    // a well-formed DID this node does not host: status false, 404, the reference's message
    const unknown = 'bafybmi' + 'd'.repeat(52)
    const res = await app.request(`/api/get-account-info?did=${unknown}`)
    expect(res.status).to.equal(404)
    expect(await json(res)).to.deep.include({ status: false, message: `DID does not have an access: ${unknown} is not hosted on this node` })
  })

  it('mints again without a start index on both surfaces, continuing from the next free index', async () => {
    const mint = async (path: string, body: unknown): Promise<{ status: boolean, message: string, result: any }> => {
      const first = await json(await post(path, body))
      expect(first.message, JSON.stringify(first)).to.equal('Password needed')
      return await json(await post('/svc/v1/signature', { id: first.result.id, password: PASSWORD }))
    }
    const v1 = await mint('/svc/v1/tokens/generate_local_rbt', { did, number_of_tokens: 2 })
    expect(v1.status, v1.message).to.equal(true)
    expect(v1.result).to.include({ start_index: 4, count: 2 })
    const legacy = await mint('/api/generate-test-token', { did, number_of_tokens: 2 })
    expect(legacy.status, legacy.message).to.equal(true)
    expect(legacy.result).to.include({ start_index: 6, count: 2 })
    const again = await mint('/api/generate-test-token', { did, number_of_tokens: 1 })
    expect(again.result).to.include({ start_index: 8, count: 1 })
    // an explicit start index that clashes is the one refusal
    const clash = await post('/svc/v1/tokens/generate_local_rbt', { did, number_of_tokens: 1, start_index: 5 })
    expect(clash.status).to.equal(409)
    expect((await json(clash)).message).to.match(/index 5 was already minted/)
  })
})

import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startNode, type EmbeddedNode } from '../../../src/index.js'
import { ApiError, RbtClient, type SignatureChallenge } from '../../../src/client/index.js'
import { freePort } from '../../helpers/ports.js'

const PW = 'sdk-test-pw'

/**
 * The package's programming surface: a node embedded with startNode, driven by the typed client
 * (the two-step flow as one call with a password callback, typed errors), and the transfer states
 * as a program sees them.
 */
describe('sdk: startNode and RbtClient', function () {
  this.timeout(60_000)
  let dir = ''
  let node: EmbeddedNode
  let did = ''

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rbtnode-sdk-'))
    node = await startNode({ p: dir, port: await freePort(), swarmPort: await freePort(), testNet: true, mdns: false, log: () => {} })
    did = (await node.client.call('didCreate', { body: { type: 4, password: PW } as never })).result!.did as string
  })

  after(async () => {
    await node?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('startNode embeds a running node with its URL, peer id and client', async () => {
    expect(node.url).to.equal(`http://127.0.0.1:${node.options.apiPort}`)
    expect(node.peerId).to.match(/^12D3KooW/)
    const st = await node.client.call('nodeStatus')
    expect(st.result?.core_started).to.equal(true)
    expect(st.result?.peer_id).to.equal(node.peerId)
  })

  it('signed() runs a two-step operation as one call, asking the callback for the password', async () => {
    const asked: Array<[SignatureChallenge, number]> = []
    const env = await node.client.signed('tokensGenerateLocalRbt', { body: { did, number_of_tokens: 3, start_index: 0 } }, { password: (c, attempt) => { asked.push([c, attempt]); return PW } })
    expect(env.status, env.message).to.equal(true)
    expect(asked).to.have.length(1)
    expect(asked[0][1]).to.equal(1)
    expect(asked[0][0].id).to.be.a('string')
    const bal = await node.client.call('didBalancesRbt', { params: { did } })
    expect(JSON.stringify(bal.result)).to.match(/"balance":3\b/)
  })

  it('a wrong password is an ApiError with its code; with retries the callback is asked again', async () => {
    const err = await node.client.signed('tokensGenerateLocalRbt', { body: { did, number_of_tokens: 1, start_index: 3 } }, { password: () => 'wrong' }).catch((e: unknown) => e)
    expect(err).to.be.instanceOf(ApiError)
    expect((err as ApiError).code).to.equal('WRONG_PASSWORD')
    expect((err as ApiError).httpStatus).to.be.within(400, 499)
    const attempts: number[] = []
    const env = await node.client.signed('tokensGenerateLocalRbt', { body: { did, number_of_tokens: 1, start_index: 4 } }, { password: (_c, n) => { attempts.push(n); return n === 1 ? 'wrong' : PW }, passwordRetries: 2 })
    expect(env.status, env.message).to.equal(true)
    expect(attempts).to.deep.equal([1, 2])
  })

  it('bad input is an ApiError carrying the envelope\'s message and code', async () => {
    const err = await node.client.call('didBalancesRbt', { params: { did: 'not-a-did' } }).catch((e: unknown) => e)
    expect(err).to.be.instanceOf(ApiError)
    expect((err as ApiError).message).to.be.a('string').and.not.equal('')
    expect((err as ApiError).code).to.be.a('string')
  })

  it('a node that is not there is an ApiError with code ECONNREFUSED', async () => {
    const c = new RbtClient({ baseUrl: `http://127.0.0.1:${await freePort()}` })
    const err = await c.call('nodeStatus').catch((e: unknown) => e)
    expect(err).to.be.instanceOf(ApiError)
    expect((err as ApiError).code).to.equal('ECONNREFUSED')
    await c.close()
  })
})

describe('sdk: transfer states', function () {
  const TX = 'ab'.repeat(32)
  let server: Server
  let client: RbtClient
  let final: { status: number, body: unknown } = { status: 200, body: {} }

  before(async () => {
    // an HTTP server answering the transfer's two steps with the envelopes the node sends
    server = createServer((req, res) => {
      const send = (status: number, body: unknown): void => { res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body)) }
      req.resume()
      req.on('end', () => {
        if (req.url === '/svc/v1/tx') send(200, { status: true, message: 'Password needed', result: { id: 'op1', mode: 4, hash: null, only_priv_key: false } })
        else send(final.status, final.body)
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    client = new RbtClient({ baseUrl: `http://127.0.0.1:${(server.address() as { port: number }).port}` })
  })

  after(async () => {
    await client.close()
    await new Promise((resolve) => server.close(resolve))
  })

  const t = async (): Promise<unknown> => await client.transfer({ from: 'bafybmia', to: 'bafybmib', amount: 1 }, { password: () => 'pw' }).catch((e: unknown) => e)

  it('committed, delivery_pending and signing_pending name the transaction; other refusals throw', async () => {
    final = { status: 200, body: { status: true, message: `Transfer finished successfully in 1.2s with trnxid ${TX}`, result: { transactionID: TX } } }
    expect(await t()).to.deep.include({ state: 'committed', transactionId: TX })
    final = { status: 502, body: { status: false, message: `Transaction ${TX}: the receiver's node has not taken them yet`, result: { code: 'DELIVERY_PENDING', transactionID: TX } } }
    expect(await t()).to.deep.include({ state: 'delivery_pending', transactionId: TX })
    final = { status: 502, body: { status: false, message: `Transaction ${TX}: signing is retried`, result: { code: 'SIGNING_PENDING', transactionID: TX } } }
    expect(await t()).to.deep.include({ state: 'signing_pending', transactionId: TX })
    final = { status: 409, body: { status: false, message: 'consensus failed', result: { code: 'CONSENSUS_FAILED' } } }
    const err = await t()
    expect(err).to.be.instanceOf(ApiError)
    expect(err).to.include({ code: 'CONSENSUS_FAILED', message: 'consensus failed', httpStatus: 409 })
  })
})

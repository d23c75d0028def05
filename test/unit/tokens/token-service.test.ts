import { expect } from 'chai'
import { createHash } from 'node:crypto'
import { auditLedger } from '../../../src/storage/token-ledger.js'
import {
  decodeBlockEnvelope, parseAmount, racFromTokenContent, validateChain, cidV0ForContent, RacType, TokenType
} from '../../../src/tokenchain/index.js'
import { isRbtError } from '../../../src/util/errors.js'
import { ringSigner, tokenEnv, type TokenEnv } from './helpers.js'

async function rejects (p: Promise<unknown>, code: string, re?: RegExp): Promise<Error> {
  try { await p } catch (e) {
    expect(isRbtError(e), String(e)).to.equal(true)
    expect((e as { code: string }).code, (e as Error).message).to.equal(code)
    if (re !== undefined) expect((e as Error).message).to.match(re)
    return e as Error
  }
  expect.fail(`expected ${code}`)
}

describe('tokens: TokenService over LevelDB', function () {
  this.timeout(30_000)
  let env: TokenEnv
  let did: string
  beforeEach(async () => {
    env = await tokenEnv()
    did = env.ring.newDid()
  })
  afterEach(async () => { await env.close() })

  async function expectClean (): Promise<void> {
    const r = await auditLedger(env.store)
    expect(r.problems, r.problems.join('\n')).to.deep.equal([])
  }

  describe('minting local RBT', () => {
    it('mints signed test tokens with RAC-derived ids, one genesis each, balance and tx in one go', async () => {
      const signer = ringSigner(env.ring, did)
      const r = await env.service.mintLocalRbt({ did, count: 5, startIndex: 10 }, signer)
      expect(r.token_ids).to.have.length(5)
      expect(new Set(r.token_ids).size).to.equal(5)
      expect(signer.calls).to.equal(10) // RAC + genesis per token
      expect(await env.service.rbtBalance(did)).to.deep.equal({ balance: 5, locked: 0, pledged: 0, pinned: 0 })
      const tx = await env.service.transaction(r.tx_id)
      expect(tx?.tokens).to.deep.equal(r.token_ids)
      expect(tx?.kind).to.equal('mint')
      for (const [i, id] of r.token_ids.entries()) {
        const content = await env.repos.tokens.content(id)
        // token id computed independently: CIDv0 of the RAC hex text; the RAC names the DID and index
        expect(cidV0ForContent(content!)).to.equal(id)
        const rac = racFromTokenContent(content!)
        expect(rac.content).to.include({ type: RacType.TEST_TOKEN, did, tokenNumber: 10 + i, totalSupply: 1 })
        const dump = await env.service.chainDump(id)
        expect(dump.blocks).to.have.length(1)
        expect(dump.blocks[0]).to.include({ number: 0, type: '05', type_name: 'Generated', owner: did, value: 1 })
        expect(dump.blocks[0]!.signers).to.deep.equal([did])
        const envelope = Buffer.from(dump.blocks[0]!.envelope, 'base64')
        expect(createHash('sha3-256').update(decodeBlockEnvelope(envelope).contentBytes).digest('hex')).to.equal(dump.blocks[0]!.hash)
        const v = await validateChain([envelope], { tokenId: id, verifier: env.ring.verifier, tokenContent: content, requireTokenContent: true })
        expect(v.kind).to.equal('test-rbt')
        expect(v.tip.owner).to.equal(did)
      }
      const list = await env.service.listTokens(did, 'rbt')
      expect(list.map((t) => t.token_id).sort()).to.deep.equal([...r.token_ids].sort())
      expect(list.every((t) => t.token_status === 'Free' && t.token_value === 1 && t.token_type === TokenType.TEST_RBT)).to.equal(true)
      await expectClean()
    })

    it('refuses an index already minted, writing nothing', async () => {
      const signer = ringSigner(env.ring, did)
      await env.service.mintLocalRbt({ did, count: 3, startIndex: 0 }, signer)
      const calls = signer.calls
      await rejects(env.service.mintLocalRbt({ did, count: 3, startIndex: 2 }, signer), 'CONFLICT', /index 2 was already minted/)
      expect(signer.calls).to.equal(calls) // refused before asking for any signature
      expect((await env.service.rbtBalance(did)).balance).to.equal(3)
      // another DID may use the same indexes
      const other = env.ring.newDid()
      await env.service.mintLocalRbt({ did: other, count: 3, startIndex: 0 }, ringSigner(env.ring, other))
      expect((await env.service.rbtBalance(other)).balance).to.equal(3)
      await expectClean()
    })

    it('without a start index continues from the DID\'s next free index; only an explicit clash is refused', async () => {
      const signer = ringSigner(env.ring, did)
      const first = await env.service.mintLocalRbt({ did, count: 2 }, signer)
      expect(first.start_index).to.equal(0)
      const second = await env.service.mintLocalRbt({ did, count: 2 }, signer)
      expect(second.start_index).to.equal(2)
      // an explicit start index further on: the next mint without one continues after it
      await env.service.mintLocalRbt({ did, count: 1, startIndex: 10 }, signer)
      const third = await env.service.mintLocalRbt({ did, count: 1 }, signer)
      expect(third.start_index).to.equal(11)
      await rejects(env.service.mintLocalRbt({ did, count: 1, startIndex: 1 }, signer), 'CONFLICT', /index 1 was already minted/)
      const racs = await Promise.all([...first.token_ids, ...second.token_ids, ...third.token_ids].map(async (id) => racFromTokenContent((await env.repos.tokens.content(id))!).content.tokenNumber))
      expect(racs).to.deep.equal([0, 1, 2, 3, 11])
      expect((await env.service.rbtBalance(did)).balance).to.equal(6)
      // the next free index is read from the store: a restarted service continues too
      await env.reopen()
      expect((await env.service.mintLocalRbt({ did, count: 1 }, ringSigner(env.ring, did))).start_index).to.equal(12)
      await expectClean()
    })

    it('concurrent mints for one DID never take the same index', async () => {
      const signer = ringSigner(env.ring, did)
      const runs = await Promise.all([3, 1, 2, 4, 1].map(async (count) => await env.service.mintLocalRbt({ did, count }, signer)))
      const indexes = runs.flatMap((r) => Array.from({ length: r.count }, (_, i) => r.start_index + i)).sort((a, b) => a - b)
      expect(indexes).to.deep.equal(Array.from({ length: 11 }, (_, i) => i))
      expect((await env.service.rbtBalance(did)).balance).to.equal(11)
      // an explicit start index further on, minted alongside mints without one: no clash
      const mixed = await Promise.all([
        env.service.mintLocalRbt({ did, count: 2, startIndex: 20 }, signer),
        env.service.mintLocalRbt({ did, count: 2 }, signer)
      ])
      expect(mixed[0].start_index).to.equal(20)
      // after the highest minted (11) or after the explicit ones, whichever read first: never 20 or 21
      expect([11, 22]).to.include(mixed[1].start_index)
      expect((await env.service.rbtBalance(did)).balance).to.equal(15)
      await expectClean()
    })

    it('rejects bad input with clear messages', async () => {
      const s = ringSigner(env.ring, did)
      await rejects(env.service.mintLocalRbt({ did: 'bafybmi-not-a-did', count: 1, startIndex: 0 }, s), 'INVALID_DID', /Invalid DID/)
      for (const count of [0, -1, 1.5, Number.NaN]) {
        await rejects(env.service.mintLocalRbt({ did, count, startIndex: 0 }, s), 'INVALID_INPUT', /whole number and greater than 0/)
      }
      await rejects(env.service.mintLocalRbt({ did, count: 10_001, startIndex: 0 }, s), 'INVALID_INPUT', /at most 10000/)
      await rejects(env.service.mintLocalRbt({ did, count: 1, startIndex: -1 }, s), 'INVALID_INPUT', /start_index/)
      await rejects(env.service.mintLocalRbt({ did, count: 1, startIndex: 0.5 }, s), 'INVALID_INPUT', /start_index/)
      expect(s.calls).to.equal(0)
      expect(() => parseAmount('1.2345')).to.throw(/more than 3 decimal places/)
      expect(() => parseAmount(0.0001)).to.throw(/more than 3 decimal places/)
      await rejects(env.service.requireToken('QmNotAToken'), 'INVALID_INPUT', /Invalid token id/)
      await rejects(env.service.requireToken('QmUeBM2pNTbyYZ4LrsCNHb3hUTpBwYgW7XHrmJucy9cKvy'), 'NOT_FOUND', /not known/)
      await rejects(env.service.rbtBalance('nope'), 'INVALID_DID')
    })

    it('is refused outside test/local mode', async () => {
      const prod = await tokenEnv({ allowed: false, ring: env.ring })
      try {
        await rejects(prod.service.mintLocalRbt({ did, count: 1, startIndex: 0 }, ringSigner(env.ring, did)), 'FORBIDDEN', /only on a test network/)
      } finally { await prod.close() }
    })

    it('keeps balances exactly across a restart', async () => {
      await env.service.mintLocalRbt({ did, count: 7, startIndex: 0 }, ringSigner(env.ring, did))
      const before = await env.service.balances(did)
      await env.reopen()
      expect(await env.service.balances(did)).to.deep.equal(before)
      expect(before.rbt_balance[0]!.balance).to.equal(7)
      await expectClean()
    })
  })

  describe('part tokens', () => {
    it('splits a whole token into parts that validate, keeping the free balance', async () => {
      const signer = ringSigner(env.ring, did)
      const { token_ids: [id] } = await env.service.mintLocalRbt({ did, count: 2, startIndex: 0 }, signer)
      const r = await env.service.splitToken(id!, parseAmount('0.3'), signer)
      expect(r.parts.map((p) => p.value)).to.deep.equal([0.3, 0.7])
      expect((await env.service.rbtBalance(did)).balance).to.equal(2)
      const parent = await env.repos.tokens.get(id!)
      expect(parent).to.include({ status: 'Burnt', latestBlockNumber: 1 })
      for (const p of r.parts) {
        const rec = await env.repos.tokens.get(p.token_id)
        expect(rec).to.include({ kind: 'part', status: 'Free', parent: id, tokenType: TokenType.TEST_PART })
        const chain = await env.repos.blocks.envelopes(await env.repos.blocks.chain(p.token_id))
        const v = await validateChain(chain, { tokenId: p.token_id, verifier: env.ring.verifier, tokenContent: await env.repos.tokens.content(p.token_id), requireTokenContent: true })
        expect(v.kind).to.equal('part')
      }
      // the parent's chain ends with a valid burn naming the parts
      const pchain = await env.repos.blocks.envelopes(await env.repos.blocks.chain(id!))
      const pv = await validateChain(pchain, { tokenId: id!, verifier: env.ring.verifier, tokenContent: await env.repos.tokens.content(id!) })
      expect(pv.tip.burnt).to.equal(true)
      expect(decodeBlockEnvelope(pchain[1]!).content.childTokens).to.deep.equal(r.parts.map((p) => p.token_id))
      // a part splits again down to 0.001
      const r2 = await env.service.splitToken(r.parts[0]!.token_id, 1, signer)
      expect(r2.parts.map((p) => p.value)).to.deep.equal([0.001, 0.299])
      expect((await env.repos.tokens.get(r2.parts[0]!.token_id))?.parent).to.equal(r.parts[0]!.token_id)
      await rejects(env.service.splitToken(r2.parts[0]!.token_id, 1, signer), 'INVALID_INPUT', /at least 0.001/)
      await rejects(env.service.splitToken(id!, 1, signer), 'CONFLICT', /Burnt/)
      await rejects(env.service.splitToken(r2.parts[1]!.token_id, 1, ringSigner(env.ring, env.ring.newDid())), 'FORBIDDEN')
      await expectClean()
    })

    it('property: random splits never create or lose value', async () => {
      const signer = ringSigner(env.ring, did)
      await env.service.mintLocalRbt({ did, count: 3, startIndex: 0 }, signer)
      let seed = 12345
      const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed % n }
      for (let i = 0; i < 25; i++) {
        const free = (await env.service.freeHoldings(did)).filter((h) => h.value > 1)
        const t = free[rnd(free.length)]!
        const need = 1 + rnd(t.value - 1)
        await env.service.splitToken(t.tokenId, need, signer)
        const holdings = await env.service.freeHoldings(did)
        expect(holdings.reduce((s, h) => s + h.value, 0)).to.equal(3000)
      }
      // every burnt token is worth exactly the sum of its two children
      const all: Array<{ tokenId: string, value: number, parent?: string, status: string }> = []
      for await (const t of env.repos.tokens.all()) all.push(t)
      for (const b of all.filter((t) => t.status === 'Burnt')) {
        const kids = all.filter((t) => t.parent === b.tokenId)
        expect(kids).to.have.length(2)
        expect(kids[0]!.value + kids[1]!.value).to.equal(b.value)
      }
      expect((await env.service.rbtBalance(did)).balance).to.equal(3)
      await expectClean()
    })
  })
})

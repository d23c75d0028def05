import { expect } from 'chai'
import { ok, type Envelope } from '../../../src/api/contract/envelope.js'
import { TwoStepEngine, decodeSignatureText, type EnginePrompt } from '../../../src/node/signing/two-step.js'
import { ErrorCode, RbtError } from '../../../src/util/errors.js'
import type { SignPrompt } from '../../../src/wallet/did-crypto.js'
import { createLogger } from '../../../src/util/logger.js'

const DID = 'bafybmi' + 'a'.repeat(52)

async function rejects (p: Promise<unknown>): Promise<RbtError> {
  try { await p } catch (e) { return e as RbtError }
  throw new Error('expected a rejection')
}

/** An operation that asks for a password (checked against `good`) and returns it reversed. */
function passwordOp (good: string, counter?: { runs: number, checks?: number }, did = DID) {
  return async (prompt: SignPrompt): Promise<Envelope<string>> => {
    const ans = await (prompt as EnginePrompt)({ did, mode: 0, kind: 'password', hash: null, onlyPrivKey: false }, {
      validate: (a) => {
        if (counter !== undefined) counter.checks = (counter.checks ?? 0) + 1
        if (a.password !== good) throw new RbtError(ErrorCode.WRONG_PASSWORD, 'wrong password')
      }
    })
    if (counter !== undefined) counter.runs++
    return ok('done', [...ans.password!].reverse().join(''))
  }
}

describe('signing: two-step engine', () => {
  let clock = 1_000_000
  const now = (): number => clock
  let engine: TwoStepEngine
  beforeEach(() => { clock = 1_000_000; engine = new TwoStepEngine({ ttlMs: 180_000, now, sweepIntervalMs: 0 }) })
  afterEach(() => { engine.stop() })

  it('returns the envelope directly when the operation needs no input', async () => {
    const env = await engine.start(DID, 0, async () => ok('no input needed', 7))
    expect(env).to.deep.equal({ status: true, message: 'no input needed', result: 7 })
    expect(engine.size).to.equal(0)
  })

  it('answers Password needed, then completes with the final envelope', async () => {
    const first = await engine.start(DID, 0, passwordOp('pw'))
    expect(first.message).to.equal('Password needed')
    const r = first.result as { id: string, mode: number, hash: null, only_priv_key: boolean }
    expect(r).to.include({ mode: 0, hash: null, only_priv_key: false })
    expect(r.id).to.match(/^[0-9a-f-]{36}$/)
    expect(await engine.complete(r.id, { password: 'pw' })).to.deep.equal({ status: true, message: 'done', result: 'wp' })
    expect(engine.size).to.equal(0)
    // at most once
    expect((await rejects(engine.complete(r.id, { password: 'pw' }))).code).to.equal(ErrorCode.CONFLICT)
  })

  it('a wrong password is a clear error and the same id stays retriable', async () => {
    const counter = { runs: 0 }
    const first = await engine.start(DID, 0, passwordOp('right', counter))
    const id = (first.result as { id: string }).id
    const e = await rejects(engine.complete(id, { password: 'wrong' }))
    expect(e.code).to.equal(ErrorCode.WRONG_PASSWORD)
    expect(counter.runs).to.equal(0)
    const missing = await rejects(engine.complete(id, {}))
    expect(missing.code).to.equal(ErrorCode.INVALID_INPUT)
    expect((await engine.complete(id, { password: 'right' })).result).to.equal('thgir')
    expect(counter.runs).to.equal(1)
  })

  it('completes each id at most once under concurrent calls', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => { release = resolve })
    const counter = { runs: 0 }
    const first = await engine.start(DID, 0, async (prompt) => {
      const ans = await prompt({ did: DID, mode: 0, kind: 'password', hash: null, onlyPrivKey: false })
      await gate
      counter.runs++
      return ok('done', ans.password)
    })
    const id = (first.result as { id: string }).id
    const calls = Array.from({ length: 8 }, async () => await engine.complete(id, { password: 'x' }).then((v) => ({ v }), (e: RbtError) => ({ e })))
    release()
    const results = await Promise.all(calls)
    const wins = results.filter((r) => 'v' in r)
    expect(wins).to.have.length(1)
    for (const r of results) if ('e' in r) expect(r.e.code).to.equal(ErrorCode.CONFLICT)
    expect(counter.runs).to.equal(1)
  })

  it('an unknown id is a clear error', async () => {
    const e = await rejects(engine.complete('00000000-0000-4000-8000-000000000000', { password: 'x' }))
    expect(e.code).to.equal(ErrorCode.NOT_FOUND)
    expect(e.message).to.equal('Invalid request ID')
  })

  it('expires after the TTL (injectable clock): the operation is aborted and the id says expired', async () => {
    let opError: unknown
    const first = await engine.start(DID, 0, async (prompt) => {
      try {
        await prompt({ did: DID, mode: 0, kind: 'password', hash: null, onlyPrivKey: false })
      } catch (e) { opError = e; throw e }
      return ok('never', null)
    })
    const id = (first.result as { id: string }).id
    clock += 179_999
    engine.sweep()
    expect(engine.size).to.equal(1)
    clock += 2
    const e = await rejects(engine.complete(id, { password: 'x' }))
    expect(e.code).to.equal(ErrorCode.EXPIRED)
    expect(engine.size).to.equal(0)
    await new Promise((resolve) => setImmediate(resolve))
    expect((opError as RbtError).code).to.equal(ErrorCode.EXPIRED)
    // later calls keep saying expired
    expect((await rejects(engine.complete(id, { password: 'x' }))).code).to.equal(ErrorCode.EXPIRED)
  })

  it('the sweep expires idle operations', async () => {
    const first = await engine.start(DID, 0, passwordOp('pw'))
    const id = (first.result as { id: string }).id
    clock += 180_000
    engine.sweep()
    expect(engine.size).to.equal(0)
    expect((await rejects(engine.complete(id, { password: 'pw' }))).code).to.equal(ErrorCode.EXPIRED)
  })

  it('issues the next challenge under the same id, and Signature needed with a base64 hash', async () => {
    const hash = 'ab'.repeat(32)
    const first = await engine.start(DID, 1, async (prompt) => {
      const a = await prompt({ did: DID, mode: 1, kind: 'password', hash: null, onlyPrivKey: false })
      const b = await prompt({ did: DID, mode: 1, kind: 'signature', hash, onlyPrivKey: true })
      return ok('both', { password: a.password, sig: Buffer.from(b.signature!).toString('hex') })
    })
    const id = (first.result as { id: string }).id
    const second = await engine.complete(id, { password: 'p' })
    expect(second.message).to.equal('Signature needed')
    expect(second.result).to.deep.equal({ id, mode: 1, hash: Buffer.from(hash).toString('base64'), only_priv_key: true })
    const der = Buffer.from('3006020101020101', 'hex')
    const done = await engine.complete(id, { signature: der.toString('base64') })
    expect(done.result).to.deep.equal({ password: 'p', sig: '3006020101020101' })
  })

  it('an operation failing after the answer surfaces its error and ends the id', async () => {
    const first = await engine.start(DID, 0, async (prompt) => {
      await prompt({ did: DID, mode: 0, kind: 'password', hash: null, onlyPrivKey: false })
      throw new RbtError(ErrorCode.NOT_FOUND, 'DID is not exist')
    })
    const id = (first.result as { id: string }).id
    expect((await rejects(engine.complete(id, { password: 'p' }))).message).to.equal('DID is not exist')
    expect((await rejects(engine.complete(id, { password: 'p' }))).code).to.equal(ErrorCode.CONFLICT)
  })

  it('stop() aborts waiting operations', async () => {
    let opError: unknown
    await engine.start(DID, 0, async (prompt) => {
      try { await prompt({ did: DID, mode: 0, kind: 'password', hash: null, onlyPrivKey: false }) } catch (e) { opError = e; throw e }
      return ok('x', null)
    })
    engine.stop()
    await new Promise((resolve) => setImmediate(resolve))
    expect((opError as RbtError).code).to.equal(ErrorCode.NOT_RUNNING)
    expect((await rejects(engine.start(DID, 0, async () => ok('x', null)))).code).to.equal(ErrorCode.NOT_RUNNING)
  })

  it('decodes signatures given as base64 or hex', () => {
    const der = Buffer.from('3006020101020101', 'hex')
    expect(Buffer.from(decodeSignatureText(der.toString('base64'))).equals(der)).to.equal(true)
    expect(Buffer.from(decodeSignatureText('3006020101020101')).equals(der)).to.equal(true)
    expect(() => decodeSignatureText('not base64!')).to.throw(/base64 or hex/)
  })

  it('caps the operations under way: 16 per DID, 256 per node, refused with TOO_MANY_REQUESTS before they run', async () => {
    const didN = (i: number): string => 'bafybmi' + String(i).padStart(52, 'c')
    const idsOf: string[] = []
    for (let i = 0; i < 16; i++) idsOf.push(((await engine.start(DID, 0, passwordOp('pw'))).result as { id: string }).id)
    let ran = false
    const e = await rejects(engine.start(DID, 0, async () => { ran = true; return ok('x', null) }))
    expect(e.code).to.equal(ErrorCode.TOO_MANY_REQUESTS)
    expect(e.message).to.match(/Too many signing requests under way for bafybmi/)
    expect(ran, 'a refused operation never runs').to.equal(false)
    // another DID is not affected; finishing one of the 16 frees a place
    expect((await engine.start(didN(1), 0, async () => ok('other', 1))).result).to.equal(1)
    expect((await engine.complete(idsOf[0]!, { password: 'pw' })).result).to.equal('wp')
    expect(((await engine.start(DID, 0, passwordOp('pw'))).result as { id: string }).id).to.be.a('string')
    // 16 DIDs x 16 = 256 waiting: the node is full for every DID
    for (let d = 1; d < 16; d++) for (let i = 0; i < 16; i++) await engine.start(didN(d), 0, passwordOp('pw', undefined, didN(d)))
    expect(engine.size).to.equal(256)
    const full = await rejects(engine.start(didN(99), 0, async () => ok('x', null)))
    expect(full.code).to.equal(ErrorCode.TOO_MANY_REQUESTS)
    expect(full.message).to.match(/on this node \(256\)/)
    // expired operations give their places back
    clock += 180_000
    engine.sweep()
    await new Promise((resolve) => setImmediate(resolve))
    expect((await engine.start(didN(99), 0, async () => ok('x', 5))).result).to.equal(5)
  })

  it('wrong passwords slow down per DID: from the third, answers are refused unchecked for 1 s, doubling to 30 s; a right one resets', async () => {
    const counter = { runs: 0, checks: 0 }
    const id = ((await engine.start(DID, 0, passwordOp('right', counter))).result as { id: string }).id
    for (let i = 0; i < 3; i++) expect((await rejects(engine.complete(id, { password: `guess${i}` }))).code).to.equal(ErrorCode.WRONG_PASSWORD)
    expect(counter.checks).to.equal(3)
    // the delay: refused without being checked, even the right password, even under another id
    const during = await rejects(engine.complete(id, { password: 'right' }))
    expect(during.code).to.equal(ErrorCode.TOO_MANY_REQUESTS)
    expect(during.message).to.equal(`Too many wrong passwords for ${DID}: retry in 1 s`)
    const other = ((await engine.start(DID, 0, passwordOp('right', counter))).result as { id: string }).id
    expect((await rejects(engine.complete(other, { password: 'right' }))).code).to.equal(ErrorCode.TOO_MANY_REQUESTS)
    expect(counter.checks).to.equal(3)
    // each further failure doubles the delay, up to 30 s
    const delays: number[] = []
    for (let i = 0; i < 8; i++) {
      const wait = Number(/retry in (\d+) s/.exec((await rejects(engine.complete(id, { password: 'x' }))).message)![1])
      delays.push(wait)
      clock += wait * 1000
      expect((await rejects(engine.complete(id, { password: `guess-${i}` }))).code).to.equal(ErrorCode.WRONG_PASSWORD)
    }
    expect(delays).to.deep.equal([1, 2, 4, 8, 16, 30, 30, 30])
    // a DID that did nothing wrong is not slowed down
    const otherDid = 'bafybmi' + 'd'.repeat(52)
    const fresh = ((await engine.start(otherDid, 0, passwordOp('ok', undefined, otherDid))).result as { id: string }).id
    expect((await engine.complete(fresh, { password: 'ok' })).result).to.equal('ko')
    // after the delay the right password works, and the count starts again
    clock += 30_000
    expect((await engine.complete(id, { password: 'right' })).result).to.equal('thgir')
    const next = ((await engine.start(DID, 0, passwordOp('right'))).result as { id: string }).id
    expect((await rejects(engine.complete(next, { password: 'x' }))).code).to.equal(ErrorCode.WRONG_PASSWORD)
    expect((await rejects(engine.complete(next, { password: 'y' }))).code).to.equal(ErrorCode.WRONG_PASSWORD)
    expect((await engine.complete(next, { password: 'right' })).result).to.equal('thgir')
  })

  it('a password checked outside a challenge (checkPassword) shares the DID\'s delay with challenge answers', async () => {
    const wrong = async (): Promise<void> => { throw new RbtError(ErrorCode.WRONG_PASSWORD, 'wrong password') }
    for (let i = 0; i < 3; i++) expect((await rejects(engine.checkPassword(DID, wrong))).code).to.equal(ErrorCode.WRONG_PASSWORD)
    let ran = false
    expect((await rejects(engine.checkPassword(DID, async () => { ran = true })))).to.include({ code: ErrorCode.TOO_MANY_REQUESTS })
    expect(ran).to.equal(false)
    const id = ((await engine.start(DID, 0, passwordOp('right'))).result as { id: string }).id
    expect((await rejects(engine.complete(id, { password: 'right' }))).code).to.equal(ErrorCode.TOO_MANY_REQUESTS)
    clock += 1000
    expect(await engine.checkPassword(DID, async () => 7)).to.equal(7)
    expect((await engine.complete(id, { password: 'right' })).result).to.equal('thgir')
  })

  it('parallel guesses are checked one at a time per DID, so they cannot outrun the delay', async () => {
    const counter = { runs: 0, checks: 0 }
    const ids: string[] = []
    for (let i = 0; i < 10; i++) ids.push(((await engine.start(DID, 0, passwordOp('right', counter))).result as { id: string }).id)
    const results = await Promise.all(ids.map(async (id, i) => await engine.complete(id, { password: `guess${i}` }).then(() => 'ok', (e: RbtError) => e.code)))
    expect(counter.checks, 'three checked, the rest refused unchecked').to.equal(3)
    expect(results.filter((r) => r === ErrorCode.WRONG_PASSWORD)).to.have.length(3)
    expect(results.filter((r) => r === ErrorCode.TOO_MANY_REQUESTS)).to.have.length(7)
  })

  it('writes one INFO audit line per operation (operation, DID, outcome), never an answer', async () => {
    const lines: string[] = []
    const logged = new TwoStepEngine({ now, sweepIntervalMs: 0, maxPendingPerDid: 2, logger: createLogger({ level: 'DEBUG', write: (l) => { lines.push(l) } }) })
    try {
      const first = await logged.start(DID, 0, passwordOp('s3cret-Pass'), 'transfer')
      const id = (first.result as { id: string }).id
      expect(lines, 'nothing before the operation ends').to.deep.equal([])
      await rejects(logged.complete(id, { password: 'Wr0ng-guess' }))
      await logged.complete(id, { password: 's3cret-Pass' })
      await rejects(logged.start(DID, 0, async () => { throw new RbtError(ErrorCode.INSUFFICIENT_BALANCE, 'no') }, 'mint-ft'))
      const parked = await logged.start(DID, 0, passwordOp('x'), 'sync')
      await logged.start(DID, 0, passwordOp('x'), 'register')
      await rejects(logged.start(DID, 0, passwordOp('x'), 'arbitrary'))
      clock += 180_000
      logged.sweep()
      await new Promise((resolve) => setImmediate(resolve))
      expect(parked.message).to.equal('Password needed')
      const audit = lines.filter((l) => l.includes('audit:')).map((l) => l.replace(/^\S+ /, ''))
      expect(audit).to.deep.equal([
        `[INFO] audit: sign transfer did=${DID} outcome=ok wrong_passwords=1`,
        `[INFO] audit: sign mint-ft did=${DID} outcome=failed code=INSUFFICIENT_BALANCE`,
        `[INFO] audit: sign arbitrary did=${DID} outcome=refused code=TOO_MANY_REQUESTS`,
        `[INFO] audit: sign sync did=${DID} outcome=expired code=EXPIRED`,
        `[INFO] audit: sign register did=${DID} outcome=expired code=EXPIRED`
      ])
      const all = lines.join('\n')
      expect(all).to.not.include('s3cret-Pass')
      expect(all).to.not.include('Wr0ng-guess')
    } finally { logged.stop() }
  })
})

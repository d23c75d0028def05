import { expect } from 'chai'
import { ok, type Envelope } from '../../../src/api/contract/envelope.js'
import { TwoStepEngine, decodeSignatureText, type EnginePrompt } from '../../../src/node/signing/two-step.js'
import { ErrorCode, RbtError } from '../../../src/util/errors.js'
import type { SignPrompt } from '../../../src/wallet/did-crypto.js'

const DID = 'bafybmi' + 'a'.repeat(52)

async function rejects (p: Promise<unknown>): Promise<RbtError> {
  try { await p } catch (e) { return e as RbtError }
  throw new Error('expected a rejection')
}

/** An operation that asks for a password (checked against `good`) and returns it reversed. */
function passwordOp (good: string, counter?: { runs: number }) {
  return async (prompt: SignPrompt): Promise<Envelope<string>> => {
    const ans = await (prompt as EnginePrompt)({ did: DID, mode: 0, kind: 'password', hash: null, onlyPrivKey: false }, {
      validate: (a) => { if (a.password !== good) throw new RbtError(ErrorCode.WRONG_PASSWORD, 'wrong password') }
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
})

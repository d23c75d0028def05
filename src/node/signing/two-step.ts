/**
 * The two-step signature engine: every operation that signs with a DID runs through it.
 *
 * An operation is started with a prompt function. When the operation needs something only the
 * caller can give (the private-key password, or an external signature for DIDs whose keys live
 * outside the node), the prompt parks the operation and the HTTP call answers with a challenge
 * `{id, mode, hash, only_priv_key}`. POST /svc/v1/signature hands the answer in with that id;
 * the same call then waits for the operation's next event: another challenge (same id) or the
 * final envelope.
 *
 * Guarantees:
 * - an answer can be checked before the operation sees it (`PromptOptions.validate`); a failing
 *   check (wrong password, a signature that does not verify) is reported to the caller and the
 *   same challenge stays open until it expires;
 * - an id is completed by at most one call at a time, and never again once the operation ended;
 * - a challenge not answered within the TTL (3 minutes, as the reference) expires: the operation
 *   is aborted with EXPIRED and the id answers "expired" afterwards;
 * - at most `maxPending` operations (256) run or wait at once on the node, and `maxPendingPerDid`
 *   (16) per DID: more are refused with TOO_MANY_REQUESTS before anything runs;
 * - wrong passwords slow down per DID: from the third failure in a row, answers to that DID's
 *   password challenges are refused (TOO_MANY_REQUESTS, "retry in N s") without being checked
 *   for 1 s, doubling with each further failure up to 30 s; a right password resets it;
 * - every operation ends with one INFO audit line: `audit: sign <operation> did=<did>
 *   outcome=<ok|failed|expired|refused> [code=<error code>] [wrong_passwords=<n>]`. Answers
 *   (passwords, signatures) never reach the log.
 */
import { randomUUID } from 'node:crypto'
import type { Envelope, PendingSignature } from '../../api/contract/envelope.js'
import { ok, PASSWORD_NEEDED, SIGNATURE_NEEDED } from '../../api/contract/envelope.js'
import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import { silentLogger, type Logger } from '../../util/logger.js'
import type { SignAnswer, SignPrompt, SignRequest } from '../../wallet/did-crypto.js'

export const DEFAULT_SIGN_TTL_MS = 180_000

export interface PromptOptions {
  /**
   * Checks an answer before it is handed to the operation. Throwing rejects this answer only:
   * the error goes back to the caller of complete() and the challenge stays open.
   */
  validate?: (answer: SignAnswer) => Promise<void> | void
}

/** The prompt the engine hands to operations: a SignPrompt that also accepts an answer check. */
export type EnginePrompt = (req: SignRequest, opts?: PromptOptions) => Promise<SignAnswer>

/**
 * What POST /svc/v1/signature carries. Signatures are base64 (as the reference sends them) or
 * hex; for a wallet DID's image signature `pixels` is the 32-byte share signature.
 */
export interface CompletionAnswer {
  password?: string
  signature?: string | Uint8Array
  pixels?: string | Uint8Array
}

/** Decode a signature given as base64 (reference clients) or hex. DER always starts with 0x30. */
export function decodeSignatureText (v: string | Uint8Array, what = 'signature'): Uint8Array {
  if (v instanceof Uint8Array) return v
  const s = v.trim()
  if (s === '') return new Uint8Array(0)
  if (/^(?:[0-9a-fA-F]{2})+$/.test(s) && s.startsWith('30')) return new Uint8Array(Buffer.from(s, 'hex'))
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(s)) throw new RbtError(ErrorCode.INVALID_INPUT, `Invalid input: ${what} must be base64 or hex`)
  return new Uint8Array(Buffer.from(s, 'base64'))
}

export const DEFAULT_MAX_PENDING = 256
export const DEFAULT_MAX_PENDING_PER_DID = 16

/** Delay after wrong passwords: none before `after` failures in a row, then `firstMs` doubling up to `maxMs`. */
export interface PasswordBackoff { after: number, firstMs: number, maxMs: number }
export const DEFAULT_PASSWORD_BACKOFF: PasswordBackoff = { after: 3, firstMs: 1_000, maxMs: 30_000 }

export interface TwoStepOptions {
  ttlMs?: number
  /** operations running or waiting for an answer at once, node-wide (default 256) */
  maxPending?: number
  /** the same, per DID (default 16) */
  maxPendingPerDid?: number
  passwordBackoff?: PasswordBackoff
  logger?: Logger
  /** Clock, injectable for tests. */
  now?: () => number
  /** How often expired operations are swept (ms); 0 disables the timer (tests call sweep()). */
  sweepIntervalMs?: number
}

type OpEvent =
  | { type: 'challenge' }
  | { type: 'done', env: Envelope<unknown> }
  | { type: 'error', error: unknown }

interface Challenge {
  req: SignRequest
  validate?: PromptOptions['validate']
  resolve: (a: SignAnswer) => void
  reject: (e: unknown) => void
}

class Pending {
  readonly events: OpEvent[] = []
  private waiter: ((e: OpEvent) => void) | undefined
  challenge: Challenge | undefined
  busy = false
  finished = false
  expiresAt: number

  /** wrong passwords handed in for this operation */
  wrongPasswords = 0

  constructor (readonly id: string, readonly did: string, readonly mode: number, expiresAt: number, readonly operation = 'operation') {
    this.expiresAt = expiresAt
  }

  push (e: OpEvent): void {
    if (this.waiter !== undefined) {
      const w = this.waiter
      this.waiter = undefined
      w(e)
    } else this.events.push(e)
  }

  async next (): Promise<OpEvent> {
    const e = this.events.shift()
    if (e !== undefined) return e
    return await new Promise<OpEvent>((resolve) => { this.waiter = resolve })
  }
}

/** Base64 as the reference sends `hash`: the ASCII bytes of the hex string to sign. */
function challengeHash (req: SignRequest): string | null {
  return req.hash === null ? null : Buffer.from(req.hash, 'latin1').toString('base64')
}

export function challengeEnvelope (id: string, req: SignRequest): Envelope<PendingSignature> {
  return ok(req.kind === 'password' ? PASSWORD_NEEDED : SIGNATURE_NEEDED, {
    id,
    mode: req.mode,
    hash: challengeHash(req),
    only_priv_key: req.onlyPrivKey
  })
}

function isChallenge (v: unknown): boolean {
  const r = (v as { result?: unknown } | null)?.result as Record<string, unknown> | null | undefined
  return r !== null && typeof r === 'object' && typeof r.id === 'string' && 'only_priv_key' in r
}

export class TwoStepEngine {
  private readonly pending = new Map<string, Pending>()
  /** Ended ids (completed or expired), remembered for a while so a late call gets a clear answer. */
  private readonly ended = new Map<string, { how: 'completed' | 'expired', at: number }>()
  private readonly ttlMs: number
  private readonly log: Logger
  private readonly now: () => number
  private timer: NodeJS.Timeout | undefined
  private stopped = false
  /** operations started and not ended, per DID (what the caps count) */
  private readonly live = new Map<string, number>()
  private liveTotal = 0
  private readonly maxPending: number
  private readonly maxPendingPerDid: number
  private readonly backoff: PasswordBackoff
  /** wrong passwords in a row per DID, and until when its password answers are refused */
  private readonly failures = new Map<string, { count: number, until: number, at: number }>()

  constructor (opts: TwoStepOptions = {}) {
    this.ttlMs = opts.ttlMs ?? DEFAULT_SIGN_TTL_MS
    this.maxPending = opts.maxPending ?? DEFAULT_MAX_PENDING
    this.maxPendingPerDid = opts.maxPendingPerDid ?? DEFAULT_MAX_PENDING_PER_DID
    this.backoff = opts.passwordBackoff ?? DEFAULT_PASSWORD_BACKOFF
    this.log = opts.logger ?? silentLogger
    this.now = opts.now ?? Date.now
    const every = opts.sweepIntervalMs ?? Math.min(5_000, Math.max(50, Math.floor(this.ttlMs / 4)))
    if (every > 0) {
      this.timer = setInterval(() => { this.sweep() }, every)
      this.timer.unref()
    }
  }

  /** Number of operations waiting for an answer. */
  get size (): number { return this.pending.size }

  /**
   * Runs `op` (`operation` names it in the audit line). If it finishes without asking, its
   * envelope is returned as is; if it asks, the caller gets the challenge and the operation waits
   * for complete(). Refused with TOO_MANY_REQUESTS, before `op` runs, when the node or the DID
   * already has its most operations under way.
   */
  async start<T> (did: string, mode: number, op: (prompt: SignPrompt) => Promise<Envelope<T>>, operation = 'operation'): Promise<Envelope<T | PendingSignature>> {
    if (this.stopped) throw new RbtError(ErrorCode.NOT_RUNNING, 'signing engine stopped')
    const mine = this.live.get(did) ?? 0
    if (this.liveTotal >= this.maxPending || mine >= this.maxPendingPerDid) {
      const e = this.liveTotal >= this.maxPending
        ? new RbtError(ErrorCode.TOO_MANY_REQUESTS, `Too many signing requests under way on this node (${this.maxPending}): answer or cancel waiting ones (they expire after ${Math.round(this.ttlMs / 1000)} s), then retry`)
        : new RbtError(ErrorCode.TOO_MANY_REQUESTS, `Too many signing requests under way for ${did} (${this.maxPendingPerDid}): answer or cancel waiting ones (they expire after ${Math.round(this.ttlMs / 1000)} s), then retry`)
      this.audit(operation, did, 'refused', e.code)
      throw e
    }
    this.live.set(did, mine + 1)
    this.liveTotal++
    const p = new Pending(randomUUID(), did, mode, this.now() + this.ttlMs, operation)
    const prompt: EnginePrompt = async (req, opts) => await this.ask(p, req, opts)
    const ended = (outcome: string, code?: string): void => {
      p.finished = true
      const n = (this.live.get(did) ?? 1) - 1
      if (n > 0) this.live.set(did, n)
      else this.live.delete(did)
      this.liveTotal--
      this.audit(operation, did, outcome, code, p.wrongPasswords)
    }
    Promise.resolve()
      .then(async () => await op(prompt as SignPrompt))
      .then((env) => { ended(env.status ? 'ok' : 'failed'); p.push({ type: 'done', env: env as Envelope<unknown> }) },
        (error: unknown) => {
          const code = error instanceof RbtError ? error.code : ErrorCode.INTERNAL
          ended(code === ErrorCode.EXPIRED ? 'expired' : 'failed', code)
          p.push({ type: 'error', error })
        })
    const e = await p.next()
    return this.answerFor(p, e) as Envelope<T | PendingSignature>
  }

  /** One INFO line per operation: what, which DID, how it ended. Nothing the caller handed in. */
  private audit (operation: string, did: string, outcome: string, code?: string, wrongPasswords = 0): void {
    this.log.info(`audit: sign ${operation} did=${did} outcome=${outcome}${code !== undefined ? ` code=${code}` : ''}${wrongPasswords > 0 ? ` wrong_passwords=${wrongPasswords}` : ''}`)
  }

  /**
   * Runs `check`, a check of a password of `did` (it throws WRONG_PASSWORD for a wrong one), under
   * the DID's backoff: refused with TOO_MANY_REQUESTS without running during the delay after wrong
   * passwords, one check of the DID at a time (so parallel guesses cannot outrun the delay); a
   * wrong password extends the delay, a right one resets it. Answers to challenges go through it,
   * and so must any other place that checks a local DID's password.
   */
  async checkPassword<T> (did: string, check: () => Promise<T>, onWrong?: () => void): Promise<T> {
    this.refuseDuringDelay(did)
    return await this.onePerDid(did, async () => {
      this.refuseDuringDelay(did)
      let r: T
      try {
        r = await check()
      } catch (e) {
        if (e instanceof RbtError && e.code === ErrorCode.WRONG_PASSWORD) {
          onWrong?.()
          this.passwordFailed(did)
        }
        throw e
      }
      this.failures.delete(did)
      return r
    })
  }

  private refuseDuringDelay (did: string): void {
    const wait = this.passwordWait(did)
    if (wait > 0) throw new RbtError(ErrorCode.TOO_MANY_REQUESTS, `Too many wrong passwords for ${did}: retry in ${wait} s`)
  }

  /** Password checks waiting or running, chained per DID. */
  private readonly checks = new Map<string, Promise<unknown>>()

  private async onePerDid<T> (did: string, fn: () => Promise<T>): Promise<T> {
    const run = (this.checks.get(did) ?? Promise.resolve()).then(fn)
    const tail = run.catch(() => {})
    this.checks.set(did, tail)
    try {
      return await run
    } finally {
      if (this.checks.get(did) === tail) this.checks.delete(did)
    }
  }

  /** Seconds until `did` may try a password again (0: now). */
  private passwordWait (did: string): number {
    const f = this.failures.get(did)
    const left = f === undefined ? 0 : f.until - this.now()
    return left > 0 ? Math.ceil(left / 1000) : 0
  }

  private passwordFailed (did: string): void {
    const now = this.now()
    const count = (this.failures.get(did)?.count ?? 0) + 1
    const b = this.backoff
    const delay = count < b.after ? 0 : Math.min(b.maxMs, b.firstMs * 2 ** (count - b.after))
    this.failures.set(did, { count, until: now + delay, at: now })
  }

  /**
   * Hands an answer to a waiting operation and returns its next challenge or final envelope.
   * Errors: unknown id (NOT_FOUND), expired id (EXPIRED), a completion already under way or
   * already done (CONFLICT), a missing field (INVALID_INPUT) and a rejected answer (the
   * validator's error, e.g. WRONG_PASSWORD) — the last two leave the challenge open.
   */
  async complete (id: string, answer: CompletionAnswer): Promise<Envelope<unknown>> {
    const p = this.pending.get(id)
    if (p === undefined) {
      const ended = this.ended.get(id)
      if (ended?.how === 'expired') throw new RbtError(ErrorCode.EXPIRED, `Request ${id} expired: no password/signature was given within ${Math.round(this.ttlMs / 1000)} s`)
      if (ended?.how === 'completed') throw new RbtError(ErrorCode.CONFLICT, `Request ${id} is already completed`)
      throw new RbtError(ErrorCode.NOT_FOUND, 'Invalid request ID')
    }
    if (p.busy) throw new RbtError(ErrorCode.CONFLICT, `Request ${id} is already being completed`)
    if (this.now() >= p.expiresAt) {
      this.expire(p)
      throw new RbtError(ErrorCode.EXPIRED, `Request ${id} expired: no password/signature was given within ${Math.round(this.ttlMs / 1000)} s`)
    }
    const ch = p.challenge
    if (ch === undefined) throw new RbtError(ErrorCode.CONFLICT, `Request ${id} is not waiting for an answer`)
    const isPassword = ch.req.kind === 'password'
    // during the delay after wrong passwords the answer is not even looked at
    if (isPassword) this.refuseDuringDelay(p.did)
    p.busy = true
    try {
      const ans = this.toSignAnswer(ch.req, answer)
      const validate = ch.validate
      if (validate !== undefined && !isPassword) await validate(ans)
      else if (validate !== undefined) await this.checkPassword(p.did, async () => { await validate(ans) }, () => { p.wrongPasswords++ })
      // the answer is accepted: from here on the id belongs to this call until the next event
      p.challenge = undefined
      ch.resolve(ans)
      const e = await p.next()
      return this.answerFor(p, e)
    } finally {
      p.busy = false
    }
  }

  /** Aborts every waiting operation. */
  stop (): void {
    this.stopped = true
    if (this.timer !== undefined) clearInterval(this.timer)
    this.timer = undefined
    for (const p of this.pending.values()) {
      p.challenge?.reject(new RbtError(ErrorCode.NOT_RUNNING, 'node is shutting down'))
      p.challenge = undefined
    }
    this.pending.clear()
  }

  /**
   * Operations that asked for a password or signature and have not ended: id, DID, what runs,
   * whether the challenge is still unanswered and when it expires. Nothing the caller handed in.
   */
  operations (): Array<{ id: string, did: string, operation: string, mode: number, waiting: boolean, expiresAt: number }> {
    return [...this.pending.values()].filter((p) => !p.finished)
      .map((p) => ({ id: p.id, did: p.did, operation: p.operation, mode: p.mode, waiting: p.challenge !== undefined && !p.busy, expiresAt: p.expiresAt }))
  }

  /** The operation of `did` waiting for its caller's answer now, if any (the oldest). */
  waitingFor (did: string): { id: string, secondsLeft: number, kind: 'password' | 'signature' } | undefined {
    for (const p of this.pending.values()) {
      if (p.did !== did || p.finished || p.busy || p.challenge === undefined) continue
      return { id: p.id, secondsLeft: Math.max(0, Math.ceil((p.expiresAt - this.now()) / 1000)), kind: p.challenge.req.kind }
    }
    return undefined
  }

  /**
   * Cancels an operation waiting for an answer: it ends as if its prompt had expired (nothing it
   * would have done happens), now rather than when the TTL runs out.
   */
  cancel (id: string): void {
    const p = this.pending.get(id)
    if (p === undefined) {
      const ended = this.ended.get(id)
      if (ended !== undefined) throw new RbtError(ErrorCode.CONFLICT, `Request ${id} has already ${ended.how === 'expired' ? 'expired' : 'ended'}`)
      throw new RbtError(ErrorCode.NOT_FOUND, 'Invalid request ID')
    }
    if (p.busy) throw new RbtError(ErrorCode.CONFLICT, `Request ${id} is being completed; it can no longer be cancelled`)
    this.log.info(`signature request ${p.id} for ${p.did} cancelled by its caller`)
    this.expire(p, 'cancelled')
  }

  /** Expires overdue operations (run by a timer; tests with a fake clock call it directly). */
  sweep (): void {
    const now = this.now()
    for (const p of [...this.pending.values()]) {
      if (!p.busy && now >= p.expiresAt) this.expire(p)
    }
    const keep = Math.max(this.ttlMs * 2, 600_000)
    for (const [id, e] of this.ended) if (now - e.at > keep) this.ended.delete(id)
    // a run of wrong passwords is forgotten a while after its delay ran out
    for (const [did, f] of this.failures) if (now - Math.max(f.at, f.until) > keep) this.failures.delete(did)
  }

  // ------------------------------------------------------------------------------------------

  private async ask (p: Pending, req: SignRequest, opts?: PromptOptions): Promise<SignAnswer> {
    if (this.stopped) throw new RbtError(ErrorCode.NOT_RUNNING, 'signing engine stopped')
    if (!this.pending.has(p.id) && this.ended.get(p.id)?.how === 'expired') {
      throw new RbtError(ErrorCode.EXPIRED, 'Timeout, failed to get password/signature')
    }
    return await new Promise<SignAnswer>((resolve, reject) => {
      p.challenge = { req, ...(opts?.validate !== undefined ? { validate: opts.validate } : {}), resolve, reject }
      p.push({ type: 'challenge' })
    })
  }

  private answerFor (p: Pending, e: OpEvent): Envelope<unknown> {
    if (e.type === 'challenge') {
      p.expiresAt = this.now() + this.ttlMs
      this.pending.set(p.id, p)
      return challengeEnvelope(p.id, p.challenge!.req)
    }
    if (this.pending.delete(p.id)) this.remember(p.id, 'completed')
    if (e.type === 'error') throw e.error
    if (isChallenge(e.env)) this.log.warn(`operation for ${p.did} returned a challenge-shaped result`)
    return e.env
  }

  private expire (p: Pending, why: 'expired' | 'cancelled' = 'expired'): void {
    this.pending.delete(p.id)
    this.remember(p.id, 'expired')
    const ch = p.challenge
    p.challenge = undefined
    if (why === 'expired') this.log.info(`signature request ${p.id} for ${p.did} expired`)
    ch?.reject(new RbtError(ErrorCode.EXPIRED, why === 'expired' ? 'Timeout, failed to get password/signature' : 'Cancelled by its caller'))
    // the operation's own ending is nobody's answer any more; drain it so it is not lost silently
    if (!p.finished) {
      void p.next().then((e) => {
        if (e.type === 'error' && !(e.error instanceof RbtError && e.error.code === ErrorCode.EXPIRED)) {
          this.log.warn(`expired operation for ${p.did} ended with: ${errorMessage(e.error)}`)
        }
      })
    }
  }

  private remember (id: string, how: 'completed' | 'expired'): void {
    this.ended.set(id, { how, at: this.now() })
    if (this.ended.size > 10_000) {
      const first = this.ended.keys().next().value
      if (first !== undefined) this.ended.delete(first)
    }
  }

  private toSignAnswer (req: SignRequest, a: CompletionAnswer): SignAnswer {
    if (req.kind === 'password') {
      if (typeof a.password !== 'string' || a.password === '') throw new RbtError(ErrorCode.INVALID_INPUT, 'Invalid input: password is required for this request')
      return { password: a.password }
    }
    const sig = a.signature === undefined ? new Uint8Array(0) : decodeSignatureText(a.signature)
    if (sig.length === 0) throw new RbtError(ErrorCode.INVALID_INPUT, 'Invalid input: signature is required for this request')
    const pixels = a.pixels === undefined ? undefined : decodeSignatureText(a.pixels, 'pixels')
    return { signature: sig, ...(pixels !== undefined && pixels.length > 0 ? { pixels } : {}) }
  }
}

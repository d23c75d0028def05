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
 *   is aborted with EXPIRED and the id answers "expired" afterwards.
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

export interface TwoStepOptions {
  ttlMs?: number
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

  constructor (readonly id: string, readonly did: string, readonly mode: number, expiresAt: number) {
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

  constructor (opts: TwoStepOptions = {}) {
    this.ttlMs = opts.ttlMs ?? DEFAULT_SIGN_TTL_MS
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
   * Runs `op`. If it finishes without asking, its envelope is returned as is; if it asks, the
   * caller gets the challenge and the operation waits for complete().
   */
  async start<T> (did: string, mode: number, op: (prompt: SignPrompt) => Promise<Envelope<T>>): Promise<Envelope<T | PendingSignature>> {
    if (this.stopped) throw new RbtError(ErrorCode.NOT_RUNNING, 'signing engine stopped')
    const p = new Pending(randomUUID(), did, mode, this.now() + this.ttlMs)
    const prompt: EnginePrompt = async (req, opts) => await this.ask(p, req, opts)
    Promise.resolve()
      .then(async () => await op(prompt as SignPrompt))
      .then((env) => { p.finished = true; p.push({ type: 'done', env: env as Envelope<unknown> }) },
        (error: unknown) => { p.finished = true; p.push({ type: 'error', error }) })
    const e = await p.next()
    return this.answerFor(p, e) as Envelope<T | PendingSignature>
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
    p.busy = true
    try {
      const ans = this.toSignAnswer(ch.req, answer)
      if (ch.validate !== undefined) await ch.validate(ans)
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

  /** Expires overdue operations (run by a timer; tests with a fake clock call it directly). */
  sweep (): void {
    const now = this.now()
    for (const p of [...this.pending.values()]) {
      if (!p.busy && now >= p.expiresAt) this.expire(p)
    }
    const keep = Math.max(this.ttlMs * 2, 600_000)
    for (const [id, e] of this.ended) if (now - e.at > keep) this.ended.delete(id)
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

  private expire (p: Pending): void {
    this.pending.delete(p.id)
    this.remember(p.id, 'expired')
    const ch = p.challenge
    p.challenge = undefined
    this.log.info(`signature request ${p.id} for ${p.did} expired`)
    ch?.reject(new RbtError(ErrorCode.EXPIRED, 'Timeout, failed to get password/signature'))
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

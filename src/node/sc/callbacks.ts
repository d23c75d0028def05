/**
 * Callback URLs of smart contracts (POST /svc/v1/smart_contracts/register_callback): on every new
 * state of a contract, each URL registered for it receives one JSON event (api/contract/sc-results.ts
 * ScCallbackEvent), POSTed with retries and exponential backoff. Delivery runs in the background and
 * never holds consensus up; a state is announced once per URL even when it reaches this node twice
 * (its own commit and a sync).
 */
import type { ScCallbackEvent } from '../../api/contract/sc-results.js'
import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import type { Logger } from '../../util/logger.js'

export interface CallbackStore {
  get: (scId: string) => Promise<string[] | undefined>
  put: (scId: string, urls: string[]) => Promise<void>
}

export interface CallbackOptions {
  store: CallbackStore
  log: Logger
  /** attempts per event and URL */
  attempts?: number
  /** first retry delay; doubled each time */
  backoffMs?: number
  timeoutMs?: number
}

export function checkCallbackUrl (raw: string): string {
  let u: URL
  try { u = new URL(raw) } catch { throw new RbtError(ErrorCode.INVALID_INPUT, `CallBackURL ${JSON.stringify(raw)} is not a URL`) }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new RbtError(ErrorCode.INVALID_INPUT, `CallBackURL must be an http or https URL, got ${u.protocol}`)
  if (u.username !== '' || u.password !== '') throw new RbtError(ErrorCode.INVALID_INPUT, 'CallBackURL must not carry credentials')
  return u.toString()
}

export class CallbackDispatcher {
  private readonly sent = new Set<string>()
  private readonly pending = new Set<Promise<void>>()

  constructor (private readonly o: CallbackOptions) {}

  async register (scId: string, url: string): Promise<string[]> {
    const clean = checkCallbackUrl(url)
    const urls = await this.o.store.get(scId) ?? []
    if (!urls.includes(clean)) urls.push(clean)
    await this.o.store.put(scId, urls)
    return urls
  }

  /** Queues the event for every URL registered for its contract; returns at once. */
  notify (e: ScCallbackEvent): void {
    const job = this.o.store.get(e.smartContractToken).then(async (urls) => {
      await Promise.all((urls ?? []).map(async (url) => {
        const key = `${url} ${e.smartContractToken}@${e.blockId}`
        if (this.sent.has(key)) return
        this.sent.add(key)
        await this.deliver(url, e)
      }))
    }).catch((err) => { this.o.log.warn(`callback for ${e.smartContractToken}: ${errorMessage(err)}`) })
    this.pending.add(job)
    void job.finally(() => this.pending.delete(job))
  }

  private async deliver (url: string, e: ScCallbackEvent): Promise<void> {
    const attempts = this.o.attempts ?? 6
    let delay = this.o.backoffMs ?? 500
    for (let i = 1; i <= attempts; i++) {
      try {
        const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(e), signal: AbortSignal.timeout(this.o.timeoutMs ?? 5000) })
        await res.body?.cancel().catch(() => {})
        if (res.ok) return
        this.o.log.debug(`callback ${url}: HTTP ${res.status} (attempt ${i}/${attempts})`)
      } catch (err) {
        this.o.log.debug(`callback ${url}: ${errorMessage(err)} (attempt ${i}/${attempts})`)
      }
      if (i < attempts) { await new Promise((resolve) => setTimeout(resolve, delay)); delay *= 2 }
    }
    this.o.log.warn(`callback ${url} for ${e.smartContractToken}@${e.blockId}: gave up after ${attempts} attempts`)
  }

  /** Waits for queued deliveries, at most `ms` (shutdown). */
  async drain (ms = 2000): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    await Promise.race([Promise.allSettled([...this.pending]), new Promise((resolve) => { timer = setTimeout(resolve, ms) })])
    clearTimeout(timer)
  }
}

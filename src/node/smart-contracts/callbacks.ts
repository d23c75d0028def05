/**
 * Callback URLs of smart contracts (POST /svc/v1/smart_contracts/register_callback): on every new
 * state of a contract, each URL registered for it receives one JSON event (api/contract/sc-results.ts
 * ScCallbackEvent), POSTed with retries and exponential backoff. Delivery runs in the background and
 * never holds consensus up; a state is announced once per URL even when it reaches this node twice
 * (its own commit and a sync).
 *
 * Where a callback may go (callback-address.ts) is checked when it is registered and again at every
 * delivery, on the URL's literal host and on every address its name resolves to; the request then
 * connects to an address that was checked (DNS rebinding). Redirects are not followed: a 3xx is a
 * failed attempt. Memory is bounded: at most MAX_URLS_PER_CONTRACT URLs per contract, a bounded
 * queue of events per URL (the oldest dropped), response bodies never read.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { isIP, type LookupFunction } from 'node:net'
import type { ScCallbackEvent } from '../../api/contract/sc-results.js'
import { KeyedMutex } from '../../consensus/keyed-mutex.js'
import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import type { Logger } from '../../util/logger.js'
import { CallbackAddressPolicy, type CallbackPolicyOptions, type ResolvedAddress } from './callback-address.js'

export interface CallbackStore {
  get: (scId: string) => Promise<string[] | undefined>
  put: (scId: string, urls: string[]) => Promise<void>
}

export interface CallbackOptions extends CallbackPolicyOptions {
  store: CallbackStore
  log: Logger
  /** attempts per event and URL */
  attempts?: number
  /** first retry delay; doubled each time */
  backoffMs?: number
  timeoutMs?: number
  /** events waiting per URL; beyond, the oldest is dropped (default 64) */
  maxQueuedPerUrl?: number
}

/** URLs one contract may have; one more is a 409. */
export const MAX_URLS_PER_CONTRACT = 5
/** states remembered as delivered (a state reaching the node twice is sent once) */
const SENT_MEMORY = 10_000

export function checkCallbackUrl (raw: string): string {
  let u: URL
  try { u = new URL(raw) } catch { throw new RbtError(ErrorCode.INVALID_INPUT, `CallBackURL ${JSON.stringify(raw.slice(0, 200))} is not a URL`) }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new RbtError(ErrorCode.INVALID_INPUT, `CallBackURL must be an http or https URL, got ${u.protocol}`)
  if (u.username !== '' || u.password !== '') throw new RbtError(ErrorCode.INVALID_INPUT, 'CallBackURL must not carry credentials')
  if (raw.length > 2048) throw new RbtError(ErrorCode.INVALID_INPUT, 'CallBackURL is longer than 2048 characters')
  return u.toString()
}

interface UrlQueue { events: ScCallbackEvent[], running: boolean }

export class CallbackDispatcher {
  readonly policy: CallbackAddressPolicy
  private readonly sent = new Set<string>()
  private readonly pending = new Set<Promise<void>>()
  private readonly queues = new Map<string, UrlQueue>()
  private readonly registering = new KeyedMutex()
  private closed = false

  constructor (private readonly o: CallbackOptions) {
    this.policy = new CallbackAddressPolicy(o)
  }

  /**
   * Adds a URL for a contract (the caller checked that the contract exists). Refused: a URL that
   * is not http(s), a target the policy forbids (400), a sixth URL (409).
   */
  async register (scId: string, url: string): Promise<string[]> {
    const clean = checkCallbackUrl(url)
    await this.policy.check(new URL(clean))
    return await this.registering.run(scId, async () => {
      const urls = await this.o.store.get(scId) ?? []
      if (urls.includes(clean)) return urls
      if (urls.length >= MAX_URLS_PER_CONTRACT) {
        throw new RbtError(ErrorCode.CONFLICT, `smart contract ${scId} already has ${urls.length} callback URLs, the most it may have`)
      }
      urls.push(clean)
      await this.o.store.put(scId, urls)
      return urls
    })
  }

  /** Queues the event for every URL registered for its contract; returns at once. */
  notify (e: ScCallbackEvent): void {
    if (this.closed) return
    this.track(this.o.store.get(e.smartContractToken).then((urls) => {
      for (const url of urls ?? []) {
        const key = `${url} ${e.smartContractToken}@${e.blockId}`
        if (this.sent.has(key)) continue
        this.remember(key)
        this.enqueue(`${e.smartContractToken} ${url}`, url, e)
      }
    }).catch((err) => { this.o.log.warn(`callback for ${e.smartContractToken}: ${errorMessage(err)}`) }))
  }

  private remember (key: string): void {
    this.sent.add(key)
    if (this.sent.size > SENT_MEMORY) this.sent.delete(this.sent.values().next().value!)
  }

  private track (job: Promise<void>): void {
    this.pending.add(job)
    void job.finally(() => this.pending.delete(job))
  }

  /** One queue per (contract, URL), delivered in order; the oldest event is dropped when it is full. */
  private enqueue (qkey: string, url: string, e: ScCallbackEvent): void {
    let q = this.queues.get(qkey)
    if (q === undefined) { q = { events: [], running: false }; this.queues.set(qkey, q) }
    q.events.push(e)
    const max = this.o.maxQueuedPerUrl ?? 64
    if (q.events.length > max) {
      const dropped = q.events.shift()!
      this.o.log.warn(`callback ${url}: more than ${max} events waiting; state ${dropped.blockId} of ${dropped.smartContractToken} not sent`)
    }
    if (q.running) return
    q.running = true
    const queue = q
    this.track((async () => {
      try {
        while (!this.closed && queue.events.length > 0) await this.deliver(url, queue.events.shift()!)
      } finally {
        queue.running = false
        if (queue.events.length === 0 && this.queues.get(qkey) === queue) this.queues.delete(qkey)
      }
    })())
  }

  private async deliver (url: string, e: ScCallbackEvent): Promise<void> {
    const attempts = this.o.attempts ?? 6
    let delay = this.o.backoffMs ?? 500
    const body = JSON.stringify(e)
    for (let i = 1; i <= attempts && !this.closed; i++) {
      try {
        const status = await this.post(new URL(url), body)
        if (status >= 200 && status < 300) return
        this.o.log.debug(`callback ${url}: HTTP ${status}${status >= 300 && status < 400 ? ' (redirects are not followed)' : ''} (attempt ${i}/${attempts})`)
      } catch (err) {
        this.o.log.debug(`callback ${url}: ${errorMessage(err)} (attempt ${i}/${attempts})`)
      }
      if (i < attempts) { await new Promise((resolve) => setTimeout(resolve, delay)); delay *= 2 }
    }
    if (!this.closed) this.o.log.warn(`callback ${url} for ${e.smartContractToken}@${e.blockId}: gave up after ${attempts} attempts`)
  }

  /**
   * One POST: the target is checked again now, and the connection goes to an address that passed
   * the check (the name is resolved once, inside the request's own lookup). The status is the
   * answer; the response body is never read.
   */
  private async post (url: URL, body: string): Promise<number> {
    const port = this.policy.portOf(url)
    const host = this.policy.hostOf(url)
    // an address in the URL is checked here; a name in the lookup below, which the socket then uses
    if (isIP(host) !== 0) await this.policy.checkHost(host, port)
    const lookup: LookupFunction = (hostname, options, callback) => {
      const cb = callback as (err: Error | null, address: string | ResolvedAddress[], family?: number) => void
      this.policy.resolveChecked(hostname, port).then((addrs) => {
        if (options.all === true) cb(null, addrs)
        else cb(null, addrs[0].address, addrs[0].family)
      }, (err: Error) => { cb(err, '', 0) })
    }
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest
    return await new Promise<number>((resolve, reject) => {
      const req = send(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        agent: false,
        lookup,
        maxHeaderSize: 16 * 1024,
        signal: AbortSignal.timeout(this.o.timeoutMs ?? 5000)
      }, (res: IncomingMessage) => {
        const status = res.statusCode ?? 0
        res.destroy()
        resolve(status)
      })
      req.on('error', reject)
      req.end(body)
    })
  }

  /** Waits for queued deliveries (including those they start), at most `ms`, then stops retrying (shutdown). */
  async drain (ms = 2000): Promise<void> {
    const deadline = Date.now() + ms
    while (this.pending.size > 0 && Date.now() < deadline) {
      let timer: NodeJS.Timeout | undefined
      await Promise.race([Promise.allSettled([...this.pending]), new Promise((resolve) => { timer = setTimeout(resolve, deadline - Date.now()) })])
      clearTimeout(timer)
    }
    this.closed = true
  }
}

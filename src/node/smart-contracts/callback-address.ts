/**
 * Where a smart-contract callback may be delivered. The rule, checked on the URL's literal host
 * and on every address its name resolves to, at registration and again at each delivery:
 *
 * - never a link-local address (169.254.0.0/16, fe80::/10: cloud metadata services answer there),
 *   nor the known metadata addresses outside it (fd00:ec2::254, 100.100.100.200);
 * - never a multicast (224.0.0.0/4, ff00::/8), unspecified (0.0.0.0/8, ::) or broadcast address
 *   (255.255.255.255, the rest of 240.0.0.0/4, and the broadcast address of each local IPv4 subnet);
 * - never this node's own HTTP ports (the API and the release-2.6 port) on a local address
 *   (loopback or any address of this machine): a callback must not drive the node's own API;
 * - when `allowHosts` is set, only the hosts it names.
 *
 * IPv4 addresses written in IPv6 form (::ffff:a.b.c.d, ::a.b.c.d, 64:ff9b::a.b.c.d) are judged
 * as the IPv4 address they carry. Anything else (the operator's apps on loopback or the LAN, public
 * hosts) is allowed.
 */
import { lookup as dnsLookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import { networkInterfaces } from 'node:os'
import { ErrorCode, RbtError } from '../../util/errors.js'

export interface ResolvedAddress { address: string, family: number }

export interface LocalInterface { address: string, family: string, cidr: string | null }

export interface CallbackPolicyOptions {
  /** this node's own HTTP ports (API, release-2.6), read at each check */
  ownPorts?: () => number[]
  /** when non-empty, the only hosts a callback may name: host names or IP addresses, case-insensitive */
  allowHosts?: readonly string[]
  /** name → every address (default: the system resolver, all addresses) */
  lookup?: (host: string) => Promise<ResolvedAddress[]>
  /** this machine's addresses (default: os.networkInterfaces) */
  interfaces?: () => LocalInterface[]
}

type Bytes = number[]

function v4Bytes (a: string): Bytes | undefined {
  const parts = a.split('.')
  if (parts.length !== 4) return undefined
  const out = parts.map((p) => /^\d{1,3}$/.test(p) ? Number(p) : NaN)
  return out.every((n) => Number.isInteger(n) && n >= 0 && n <= 255) ? out : undefined
}

function v6Bytes (input: string): Bytes | undefined {
  let s = input.toLowerCase()
  const zone = s.indexOf('%')
  if (zone >= 0) s = s.slice(0, zone)
  const lastColon = s.lastIndexOf(':')
  if (lastColon < 0) return undefined
  const last = s.slice(lastColon + 1)
  if (last.includes('.')) {
    const v4 = v4Bytes(last)
    if (v4 === undefined) return undefined
    s = `${s.slice(0, lastColon + 1)}${((v4[0] << 8) | v4[1]).toString(16)}:${((v4[2] << 8) | v4[3]).toString(16)}`
  }
  const halves = s.split('::')
  if (halves.length > 2) return undefined
  const groups = (h: string): string[] => h === '' ? [] : h.split(':')
  const head = groups(halves[0])
  const tail = halves.length === 2 ? groups(halves[1]) : []
  const fill = 8 - head.length - tail.length
  if (halves.length === 1 ? fill !== 0 : fill < 1) return undefined
  const all = [...head, ...Array<string>(halves.length === 2 ? fill : 0).fill('0'), ...tail]
  const out: Bytes = []
  for (const g of all) {
    if (!/^[0-9a-f]{1,4}$/.test(g)) return undefined
    const n = parseInt(g, 16)
    out.push(n >> 8, n & 0xff)
  }
  return out
}

/** The address as bytes, IPv4 carried in IPv6 form unwrapped. */
function addressBytes (address: string): Bytes | undefined {
  const kind = isIP(address.split('%')[0])
  if (kind === 4) return v4Bytes(address)
  if (kind !== 6) return undefined
  const b = v6Bytes(address)
  if (b === undefined) return undefined
  const zeros = (from: number, to: number): boolean => b.slice(from, to).every((x) => x === 0)
  // ::ffff:a.b.c.d (mapped)
  if (zeros(0, 10) && b[10] === 0xff && b[11] === 0xff) return b.slice(12)
  // 64:ff9b::a.b.c.d (NAT64 well-known prefix)
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zeros(4, 12)) return b.slice(12)
  // ::a.b.c.d (IPv4-compatible, deprecated); not :: and not ::1
  if (zeros(0, 12) && !(zeros(12, 15) && (b[15] === 0 || b[15] === 1))) return b.slice(12)
  return b
}

function inPrefix (b: Bytes, prefix: Bytes, bits: number): boolean {
  if (b.length !== prefix.length) return false
  for (let i = 0; i < bits; i++) {
    const bit = 7 - (i % 8)
    if (((b[i >> 3] >> bit) & 1) !== ((prefix[i >> 3] >> bit) & 1)) return false
  }
  return true
}

const same = (a: Bytes, b: Bytes): boolean => a.length === b.length && a.every((x, i) => x === b[i])

const V4 = (a: string): Bytes => v4Bytes(a)!
const V6 = (a: string): Bytes => v6Bytes(a)!

/** [prefix, bits, why] of addresses no callback may reach */
const FORBIDDEN: Array<[Bytes, number, string]> = [
  [V4('169.254.0.0'), 16, 'a link-local address (where cloud metadata services answer)'],
  [V6('fe80::'), 10, 'a link-local address (where cloud metadata services answer)'],
  [V6('fd00:ec2::254'), 128, 'a cloud metadata address'],
  [V4('100.100.100.200'), 32, 'a cloud metadata address'],
  [V4('0.0.0.0'), 8, 'an unspecified address'],
  [V6('::'), 128, 'an unspecified address'],
  [V4('224.0.0.0'), 4, 'a multicast address'],
  [V6('ff00::'), 8, 'a multicast address'],
  [V4('255.255.255.255'), 32, 'a broadcast address'],
  [V4('240.0.0.0'), 4, 'a reserved address']
]

const LOOPBACK: Array<[Bytes, number]> = [[V4('127.0.0.0'), 8], [V6('::1'), 128]]

function defaultInterfaces (): LocalInterface[] {
  return Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => ({ address: i.address, family: String(i.family), cidr: i.cidr })))
}

async function defaultLookup (host: string): Promise<ResolvedAddress[]> {
  return await dnsLookup(host, { all: true, verbatim: true })
}

const refuse = (host: string, why: string): RbtError => new RbtError(ErrorCode.INVALID_INPUT, `CallBackURL host ${host} is refused: ${why}`)

export class CallbackAddressPolicy {
  private readonly allow: Set<string>
  private readonly lookup: (host: string) => Promise<ResolvedAddress[]>

  constructor (private readonly o: CallbackPolicyOptions = {}) {
    this.allow = new Set((o.allowHosts ?? []).map((h) => h.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1')).filter((h) => h !== ''))
    this.lookup = o.lookup ?? defaultLookup
  }

  /** The URL's host as a name or a bare IP address (IPv6 without brackets), lower case. */
  hostOf (url: URL): string { return url.hostname.toLowerCase().replace(/^\[(.*)\]$/, '$1') }

  portOf (url: URL): number { return url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80 }

  /** The whole check of a URL (registration): allowlist, literal host or every resolved address. */
  async check (url: URL): Promise<void> {
    await this.checkHost(this.hostOf(url), this.portOf(url))
  }

  /** Allowlist, then the literal address, or every address the name resolves to. */
  async checkHost (host: string, port: number): Promise<void> {
    if (this.allow.size > 0 && !this.allow.has(host)) throw refuse(host, 'it is not in the configured callback_hosts')
    if (isIP(host) !== 0) this.checkAddress(host, host, port)
    else await this.resolveChecked(host, port)
  }

  /** Every address of `host`, each checked; refused when any one is forbidden or none is found. */
  async resolveChecked (host: string, port: number): Promise<ResolvedAddress[]> {
    const name = host.toLowerCase()
    if (this.allow.size > 0 && !this.allow.has(name)) throw refuse(name, 'it is not in the configured callback_hosts')
    let addrs: ResolvedAddress[]
    try { addrs = await this.lookup(name) } catch { throw refuse(name, 'the name does not resolve') }
    if (addrs.length === 0) throw refuse(name, 'the name does not resolve')
    for (const a of addrs) this.checkAddress(name, a.address, port)
    return addrs
  }

  /** Throws INVALID_INPUT when `address` (reached for `host`) may not receive callbacks on `port`. */
  checkAddress (host: string, address: string, port: number): void {
    const b = addressBytes(address)
    const shown = host === address ? host : `${host} (${address})`
    if (b === undefined) throw refuse(shown, 'not an IP address')
    for (const [prefix, bits, why] of FORBIDDEN) if (inPrefix(b, prefix, bits)) throw refuse(shown, why)
    const ifaces = (this.o.interfaces ?? defaultInterfaces)()
    if (b.length === 4 && ifaces.some((i) => { const bc = broadcastOf(i); return bc !== undefined && same(bc, b) })) throw refuse(shown, 'a broadcast address')
    const own = this.o.ownPorts?.() ?? []
    if (own.includes(port)) {
      const local = LOOPBACK.some(([p, bits]) => inPrefix(b, p, bits)) || ifaces.some((i) => { const ib = addressBytes(i.address); return ib !== undefined && same(ib, b) })
      if (local) throw refuse(shown, `port ${port} of a local address is this node's own API`)
    }
  }
}

/** The directed broadcast address of a local IPv4 subnet (none for /31 and /32). */
function broadcastOf (i: LocalInterface): Bytes | undefined {
  if (i.cidr === null || !i.cidr.includes('/')) return undefined
  const b = v4Bytes(i.address)
  const bits = Number(i.cidr.split('/')[1])
  if (b === undefined || !Number.isInteger(bits) || bits >= 31 || bits < 1) return undefined
  const n = ((b[0] << 24) | (b[1] << 16) | (b[2] << 8) | b[3]) >>> 0
  const bc = (n | (0xffffffff >>> bits)) >>> 0
  return [bc >>> 24, (bc >>> 16) & 0xff, (bc >>> 8) & 0xff, bc & 0xff]
}

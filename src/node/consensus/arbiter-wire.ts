import { registrationDigest, stakeStateOf, type ArbiterRegistration } from '../../consensus/arbiter-registration.js'
import { spendAnchor } from '../../tokenchain/validate.js'
import { sha3Hex } from '../../tokenchain/hash.js'
import type { ChainBundle } from '../../consensus/types.js'
import { bytesToHex, hexToBytes } from '../../wallet/bytes.js'

/**
 * An arbiter registration as it travels between nodes and is kept (docs/protocol.md, "The arbiter
 * committee"): the record with its staked tokens' chains and contents packed as hex and strings,
 * the addresses beside it, the key a check of it is shared and remembered by, and where it stands
 * in the list's order.
 */

/** A registration on the wire: the record, the staked tokens' chains (hex block envelopes) and contents, the peer's addresses. */
export interface WireRegistration {
  reg: ArbiterRegistration
  chains?: Record<string, string[]>
  contents?: Record<string, string>
  addrs?: string[]
}

/** Most blocks a staked token's chain shown with a registration may hold. */
const MAX_CHAIN_BLOCKS = 64

/**
 * The states a registration's stake is probed at: each staked token's spend anchor, read from the
 * chain it shows (the claims of a spend are keyed there, not on the staked block when it is a
 * genesis or an owner-only block).
 */
export function stakeProbeStates (w: Pick<WireRegistration, 'reg' | 'chains'>): string[] {
  const anchors = stakeAnchors(w)
  return w.reg.stake.map((s, i) => stakeStateOf(s, anchors[i]!))
}

/** Each staked token's spend anchor, read from the chain the registration shows (the staked block when none is shown). */
export function stakeAnchors (w: Pick<WireRegistration, 'reg' | 'chains'>): string[] {
  return w.reg.stake.map((s) => {
    const chain = w.chains?.[s.token]
    // the chain was validated when the registration was taken: it ends at the staked block
    try { if (chain !== undefined && chain.length > 0) return spendAnchor(chain.map((e) => hexToBytes(e))) } catch {}
    return s.block
  })
}

/** What a value weighs on the wire: its JSON in UTF-8 bytes (a character past ASCII, as unsigned addresses may carry, weighs up to 3). */
export const jsonBytes = (x: unknown): number => Buffer.byteLength(JSON.stringify(x), 'utf8')

/**
 * Where a registration stands in the list's order (its time, then its digest, `registrationDigest`,
 * the key it is kept under): a page's cursor.
 */
export const cursorOf = (at: number, digest: string): string => `${String(at).padStart(16, '0')}|${digest}`

/**
 * A registration as it is kept and goes on the wire: its staked tokens' chains and contents only,
 * and at most 8 addresses. Nothing else a relay adds (other chains, contents, fields) is kept or
 * passed on: a charter, kept for good and sent in every list answer, padded near the frame limit
 * made every `arbiters.list` answer too large to send.
 */
export const wireOf = (s: WireRegistration): WireRegistration => {
  const staked = Array.isArray(s.reg?.stake) ? s.reg.stake.map((t) => t.token) : []
  const pick = <T>(m: Record<string, T> | undefined): Record<string, T> | undefined => {
    if (m === undefined || m === null || typeof m !== 'object') return undefined
    const out: Record<string, T> = {}
    for (const t of staked) if (Object.prototype.hasOwnProperty.call(m, t)) out[t] = m[t]!
    return out
  }
  const chains = pick(s.chains)
  const contents = pick(s.contents)
  return { reg: s.reg, ...(chains !== undefined ? { chains } : {}), ...(contents !== undefined ? { contents } : {}), ...(Array.isArray(s.addrs) ? { addrs: cleanAddrs(s.addrs) } : {}) }
}

/** A registration as offered: its digest and a hash of what the signatures do not cover (its chains and contents). */
export function wireKey (w: WireRegistration): string {
  return `${registrationDigest(w.reg)}|${sha3Hex(new TextEncoder().encode(JSON.stringify([w.chains ?? null, w.contents ?? null])))}`
}

/** At most 8 addresses, each a string under 256 characters; anything else an offer carried (not a list, other values) is none. */
export const cleanAddrs = (addrs: unknown): string[] => Array.isArray(addrs) ? addrs.filter((a): a is string => typeof a === 'string' && a.length < 256).slice(0, 8) : []

/** The chains and contents of the tokens `ids` out of a bundle, packed for the wire. */
export function packBundle (b: ChainBundle, ids: readonly string[]): Pick<WireRegistration, 'chains' | 'contents'> {
  const chains: Record<string, string[]> = {}
  const contents: Record<string, string> = {}
  for (const id of ids) {
    const c = b.chains[id]
    if (c !== undefined) chains[id] = c.map((e) => bytesToHex(e))
    if (b.contents[id] !== undefined) contents[id] = b.contents[id]!
  }
  return { chains, contents }
}

/** The chains and contents of the tokens `ids` a registration shows, unpacked; or why they are missing or malformed. */
export function unpackBundle (w: WireRegistration, ids: readonly string[]): ChainBundle | string {
  const chains: Record<string, Uint8Array[]> = {}
  const contents: Record<string, string> = {}
  for (const id of ids) {
    const c = w.chains?.[id]
    if (!Array.isArray(c) || c.length === 0 || c.length > MAX_CHAIN_BLOCKS || !c.every((e) => typeof e === 'string' && e.length < 1_000_000 && /^[0-9a-f]*$/.test(e))) return `the chain of staked token ${id} is missing or malformed`
    chains[id] = c.map((e) => hexToBytes(e))
    const content = w.contents?.[id]
    if (content !== undefined) {
      if (typeof content !== 'string' || content.length > 100_000) return `the content of staked token ${id} is malformed`
      contents[id] = content
    }
  }
  return { chains, contents }
}

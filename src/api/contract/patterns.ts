/**
 * What a DID, a peer id and a token id look like, with no runtime dependencies: the server's
 * schemas (schemas.ts) and the CLI's client-side checks use these same expressions.
 */
export const DID_PATTERN = /^bafybmi[a-z2-7]{52}$/
export const DID_HINT = 'expected 59 characters starting with bafybmi'
export const PEER_ID_PATTERN = /^12D3KooW[1-9A-HJ-NP-Za-km-z]{44}$/
export const PEER_ID_HINT = 'expected 52 characters starting with 12D3KooW'
/** A token id (CIDv0 of the token content). */
export const TOKEN_ID_PATTERN = /^Qm[1-9A-HJ-NP-Za-km-z]{44}$/
export const TOKEN_ID_HINT = 'expected 46 characters starting with Qm'
/** A peer named by address: a peer id, or a multiaddr ending with /p2p/<peer id> (a fullnode, say). */
export const PEER_ADDRESS_HINT = `a peer id (${PEER_ID_HINT}) or a multiaddr ending with /p2p/<peer id>`
export function isPeerAddress (v: string): boolean {
  if (PEER_ID_PATTERN.test(v)) return true
  const m = /\/p2p\/([^/]+)$/.exec(v)
  return v.startsWith('/') && m !== null && PEER_ID_PATTERN.test(m[1]!)
}

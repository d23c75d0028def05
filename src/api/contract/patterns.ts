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

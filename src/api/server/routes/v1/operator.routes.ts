import { fail, ok } from '../../../contract/envelope.js'
import type { ApiServices } from '../../services.js'
import type { OperatorApi } from '../../services.js'
import { ErrorCode, RbtError } from '../../../../util/errors.js'
import type { Registrar } from '../../registrar.js'

/** validate-token-chain's `blockcount` (already checked to be an integer): 0 when absent, the whole chain. */
export const blockCountOf = (q: string | undefined): number => q === undefined || q === '' ? 0 : Number.parseInt(q, 10)

/** The operator features of the reference's CLI (docs/api.md, "Operator features"). */
export function operatorRoutes (r: Registrar, s: ApiServices): void {
  const op = (): OperatorApi => {
    if (s.operator === undefined) throw new RbtError(ErrorCode.NOT_FOUND, 'operator features are not served by this node')
    return s.operator
  }
  r.on('tokensReleaseLocked', async ({ body }) => {
    const res = await op().releaseLocked(body.min_age_seconds !== undefined ? { minAgeMs: body.min_age_seconds * 1000 } : {})
    // the reference's text when nothing is held back
    const msg = res.kept.length === 0
      ? `All Locked Tokens Releases Successfully Or NO Locked Tokens to release (${res.released.length} released)`
      : `Released ${res.released.length} locked token(s); kept ${res.kept.length} held by transactions that may still commit`
    return ok(msg, res)
  })
  r.on('tokensValidateChain', async ({ query }) => {
    const res = await op().validateChains(query.did, query.token, { blockCount: blockCountOf(query.blockcount) })
    const bad = res.tokens.find((t) => !t.valid)
    if (bad?.bad_block != null) {
      const b = bad.bad_block
      return fail(`token ${bad.token}: block ${b.block_number}${b.token !== bad.token ? ` of ${b.token}` : ''} failed the ${b.check} check: ${b.reason}`, res) as never
    }
    return ok(res.checked === 0 ? `token chain validated successfully (no tokens of ${res.did} on this node)` : `token chain validated successfully (${res.checked} token(s))`, res)
  })
  r.on('doubleSpends', async ({ query }) => {
    const list = await op().doubleSpends({ ...(query.token !== undefined ? { token: query.token } : {}), ...(query.limit !== undefined ? { limit: query.limit } : {}) })
    return ok(list.length === 0 ? 'No double spends seen by this node' : `${list.length} double spend(s) seen by this node`, list)
  })
  r.on('arbitersDistrusted', async () => {
    const list = await op().distrustedArbiters()
    return ok(list.length === 0 ? 'No arbiter distrusted by this node' : `${list.length} arbiter(s) distrusted by this node`, list)
  })
  r.on('arbiters', async () => {
    const res = await op().arbiters()
    return ok(res.in_force ? `the arbiter committee is in force: ${res.seats} seat(s)` : `no arbiter committee in force (${res.seats} seat(s), ${res.minimum} needed): the claims count the peers of this node's view`, res)
  })
  r.on('arbitersRegister', async ({ body }) => {
    const res = await op().arbiterRegister(body.did, body.leave === true)
    return ok(res.state === 'left' ? `${res.did} leaves the arbiter committee` : `${res.did} registered as an arbiter (peer ${res.peer}); its seat counts once the registration matures`, res)
  })
  r.on('tokensClaims', async ({ query }) => {
    const res = await op().tokenClaims(query.token, query.block)
    const held = res.states.filter((s) => s.claim !== null).length
    return ok(held === 0 ? `no claim held here on the ${res.states.length} state(s) of token ${res.token}` : `${held} claim(s) held here on the ${res.states.length} state(s) of token ${res.token}`, res)
  })
  r.on('quorumsPledgedTokens', async () => ok('Got pledged tokens with token states info successfully', await op().pledgedTokens()))
  r.on('nodeTxCounts', async () => {
    const counts = await op().txCounts()
    // as the reference: a node with no DID answers status false
    return counts.length === 0 ? fail('no DIDs on this node', counts) as never : ok('Got transaction counts of the DIDs of this node', counts)
  })
  r.on('quorumsRunUnpledge', async () => {
    const res = await op().runUnpledge()
    return ok(res.tokens.length === 0 ? 'No tokens present to unpledge' : `Unpledging of pledged tokens was successful, Total Unpledge Amount: ${res.released} RBT`, res)
  })
  r.on('txSelfTransfer', async ({ body }) => await op().selfTransfer(body.did, body.min_age_seconds !== undefined ? { minAgeMs: body.min_age_seconds * 1000 } : {}))
}

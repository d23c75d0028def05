/**
 * The node's FT API: binds the FT service to identity (local DIDs, their signers) and to the
 * two-step signing engine. Transfers of FTs go through the consensus API (POST /svc/v1/tx).
 */
import { ok, type Envelope, type PendingSignature } from '../../api/contract/envelope.js'
import { bytesToHex } from '../../tokenchain/hash.js'
import type { FtListItem, FtMintResult, FtService } from '../../tokens/ft-service.js'
import type { FtMintRequest } from '../../tokens/ft.js'
import type { TokenSigner } from '../../tokens/token-service.js'
import { ErrorCode, RbtError } from '../../util/errors.js'
import type { TokenIdentityPort, TwoStepPort } from './token-api.js'
import type { FtApi } from '../../api/server/services.js'
export type { FtApi } from '../../api/server/services.js'

export function createFtApi (fts: FtService, identity: TokenIdentityPort, twoStep: TwoStepPort): FtApi {
  return {
    mint: async (req) => {
      await fts.precheck(req)
      const rec = await identity.record(req.did)
      if (rec === undefined) throw new RbtError(ErrorCode.FORBIDDEN, `DID does not have an access: ${req.did} is not hosted on this node`)
      return await twoStep.start(req.did, rec.type, async (prompt) => {
        const didSigner = await identity.signerFor(req.did, prompt)
        const signer: TokenSigner = { did: req.did, sign: async (h) => bytesToHex(await didSigner.pvtSign(h)) }
        const r = await fts.mint(req, signer)
        return ok(`${r.ft_count} FTs "${r.ft_name}" minted successfully`, r)
      }, 'mint-ft')
    },
    list: async () => await fts.list()
  }
}

/**
 * The node's token API: binds the token domain service to identity (local DIDs, their signers)
 * and to the two-step signing engine, and maps domain results onto the HTTP contract's shapes.
 */
import { ok, type Envelope, type PendingSignature } from '../../api/contract/envelope.js'
import type { SignPrompt } from '../../wallet/did-crypto.js'
import { bytesToHex } from '../../tokenchain/hash.js'
import type { TokenFamily } from '../../storage/token-records.js'
import type { AccountInfo, Balances, ChainDump, FtBalanceItem, MintResult, NftBalanceItem, RbtBalance, TokenListItem, TokenService, TokenSigner } from '../../tokens/index.js'
import { ErrorCode, RbtError } from '../../util/errors.js'
import type { TokenApi } from '../../api/server/services.js'
export type { TokenApi } from '../../api/server/services.js'

/** What the token API needs from identity (IdentityService provides it). */
export interface TokenIdentityPort {
  record: (did: string) => Promise<{ type: number } | undefined>
  signerFor: (did: string, prompt: SignPrompt) => Promise<{ pvtSign: (message: string | Uint8Array) => Promise<Uint8Array> }>
}

/** The two-step engine's start(). */
export interface TwoStepPort {
  start: <T>(did: string, mode: number, op: (prompt: SignPrompt) => Promise<Envelope<T>>, operation?: string) => Promise<Envelope<T | PendingSignature>>
}

const FAMILY_BY_TYPE: Record<string, TokenFamily> = { rbt: 'rbt', part: 'rbt', ft: 'ft', nft: 'nft', smartcontract: 'sc', sc: 'sc' }

export function tokenFamilyOf (type: string | undefined): TokenFamily {
  const f = FAMILY_BY_TYPE[(type ?? 'rbt').toLowerCase()]
  if (f === undefined) throw new RbtError(ErrorCode.INVALID_INPUT, `Invalid token type "${String(type)}": use rbt, ft, nft or smartContract`)
  return f
}

export function createTokenApi (tokens: TokenService, identity: TokenIdentityPort, twoStep: TwoStepPort): TokenApi {
  const localType = async (did: string): Promise<number> => {
    const rec = await identity.record(did)
    if (rec === undefined) throw new RbtError(ErrorCode.FORBIDDEN, `DID does not have an access: ${did} is not hosted on this node`)
    return rec.type
  }
  return {
    generateLocalRbt: async (input) => {
      const req = { did: input.did, count: input.number_of_tokens, ...(input.start_index !== undefined ? { startIndex: input.start_index } : {}) }
      tokens.checkMintRequest(req)
      const mode = await localType(req.did)
      await tokens.precheckMint(req)
      return await twoStep.start(req.did, mode, async (prompt) => {
        const didSigner = await identity.signerFor(req.did, prompt)
        const signer: TokenSigner = { did: req.did, sign: async (h) => bytesToHex(await didSigner.pvtSign(h)) }
        const r = await tokens.mintLocalRbt(req, signer)
        return ok('Local RBT tokens generated successfully', r)
      }, 'mint-rbt')
    },
    balances: async (did) => await tokens.balances(did),
    rbtBalance: async (did) => await tokens.rbtBalance(did),
    ftBalance: async (did) => await tokens.ftBalance(did),
    nftBalance: async (did) => await tokens.nftBalance(did),
    list: async (did, type) => await tokens.listTokens(did, tokenFamilyOf(type)),
    chain: async (tokenId, opts) => await tokens.chainDump(tokenId, opts),
    accountInfo: async (did) => {
      // as the reference: account info is for DIDs hosted on this node
      const rec = await identity.record(did)
      if (rec === undefined) throw new RbtError(ErrorCode.NOT_FOUND, `DID does not have an access: ${did} is not hosted on this node`)
      return await tokens.accountInfo(did, rec.type)
    }
  }
}

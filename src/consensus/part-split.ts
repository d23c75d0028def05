import { burntBlock, createBlock, decodeBlockEnvelope, encodeBlockEnvelope, formatBlockId, partTokenGenesis, setSignature } from '../tokenchain/block.js'
import { createRac, encodeRacEnvelope, racTokenContent, racTokenId } from '../tokenchain/rac.js'
import { RacType, TokenType } from '../tokenchain/types.js'
import { ErrorCode, RbtError } from '../util/errors.js'
import type { ConsensusSigner, TokenState } from './ports.js'

export interface SplitResult {
  parent: TokenState
  burnBlock: { number: number, envelope: Uint8Array }
  parts: Array<{ token: TokenState, genesis: Uint8Array }>
}

const isTestType = (t: number): boolean => t === TokenType.TEST_RBT || t === TokenType.TEST_PART

/**
 * Splits `parent` into a part worth `partMilli` and a part worth the rest: the parent gets a burn
 * block naming both children, each child a genesis and a signed RAC descriptor (its content, hence
 * its id). Every block and descriptor is signed by the owner. Nothing is stored here.
 */
export async function splitToken (parent: TokenState, latestBlock: Uint8Array, partMilli: number, signer: ConsensusSigner, now: number): Promise<SplitResult> {
  if (signer.did !== parent.owner) throw new RbtError(ErrorCode.FORBIDDEN, `${signer.did} does not own token ${parent.tokenId}`)
  if (partMilli <= 0 || partMilli >= parent.valueMilli) throw new RbtError(ErrorCode.INVALID_INPUT, `cannot split ${parent.valueMilli} milli-RBT into ${partMilli} and the rest`)
  const test = isTestType(parent.tokenType)
  const values = [partMilli, parent.valueMilli - partMilli]
  const children: Array<{ id: string, content: string, value: number }> = []
  for (let i = 0; i < 2; i++) {
    const rac = createRac({
      type: test ? RacType.TEST_PART_TOKEN : RacType.PART_TOKEN,
      version: 1,
      did: parent.owner,
      tokenNumber: i,
      totalSupply: 1,
      timestamp: new Date(now).toISOString(),
      partInfo: { parentId: parent.tokenId, partNumber: i, value: values[i] / 1000 }
    })
    rac.signature = await signer.pvtSign(rac.hash)
    const env = encodeRacEnvelope(rac)
    children.push({ id: racTokenId(env), content: racTokenContent(env), value: values[i] })
  }
  const prev = decodeBlockEnvelope(latestBlock)
  let burn = createBlock(burntBlock(prev, parent.tokenId, parent.owner, parent.valueMilli / 1000, children.map((c) => c.id), 'split into parts'))
  burn = setSignature(burn, parent.owner, await signer.pvtSign(burn.hash))
  const burnNumber = Number(prev.content.transInfo.tokens[parent.tokenId]?.blockNumber ?? '0') + 1
  const parts: SplitResult['parts'] = []
  for (const c of children) {
    let g = createBlock(partTokenGenesis({
      tokenId: c.id,
      owner: parent.owner,
      parentId: parent.tokenId,
      grandParentIds: parent.parentId !== undefined ? [parent.parentId] : [],
      value: c.value / 1000,
      tokenType: test ? TokenType.TEST_PART : TokenType.PART
    }))
    g = setSignature(g, parent.owner, await signer.pvtSign(g.hash))
    parts.push({
      genesis: encodeBlockEnvelope(g),
      token: {
        tokenId: c.id,
        tokenType: test ? TokenType.TEST_PART : TokenType.PART,
        valueMilli: c.value,
        owner: parent.owner,
        status: 'Free',
        latestBlockId: formatBlockId(0, g.hash),
        parentId: parent.tokenId,
        content: c.content,
        updatedAt: now
      }
    })
  }
  return {
    parent: { ...parent, status: 'Burnt', latestBlockId: formatBlockId(burnNumber, burn.hash), updatedAt: now },
    burnBlock: { number: burnNumber, envelope: encodeBlockEnvelope(burn) },
    parts
  }
}

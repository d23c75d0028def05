import { join } from 'node:path'
import { LevelStore } from '../../../src/storage/level-store.js'
import { TokenLedger } from '../../../src/storage/token-ledger.js'
import { levelTokenRepositories } from '../../../src/storage/token-repositories.js'
import { Collections, type TokenRecord } from '../../../src/storage/token-records.js'
import { createBlock, decodeBlockEnvelope, encodeBlockEnvelope, formatBlockId, nextTokenEntry, setSignature } from '../../../src/tokenchain/block.js'
import { sha3Hex } from '../../../src/tokenchain/hash.js'
import { TransactionType } from '../../../src/tokenchain/types.js'
import { blockRecordOf } from '../../../src/tokens/token-service.js'
import { liteKeyFromMnemonic } from '../../../src/wallet/bip39.js'
import { bytesToHex } from '../../../src/wallet/bytes.js'
import { signMessage } from '../../../src/wallet/signing.js'
import type { NodeProcess } from '../node-process.js'

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s)

/** The data dir of a test-network node started by NodeProcess (`-p <dir>`, network TestNet). */
export const nodeDatabase = (n: NodeProcess): string => join(n.dir, 'Rubix', 'TestNet', 'db')

/**
 * Case 2, the owner-only fork: on the stopped node `n`, appends to the token's chain a block its
 * owner signs alone (type `type`: "11", a contract commit; "04"/"06", a pledge; honest code never
 * makes one on a wallet's token), built with the project's tokenchain code and signed with the
 * wallet's key derived from its mnemonic, and makes it the token's latest block there. The node
 * then holds the token at a new state no quorum ever signed. Answers the new block id.
 */
export async function appendOwnerOnlyBlock (n: NodeProcess, o: { tokenId: string, did: string, mnemonic: string, type?: string }): Promise<string> {
  const store = new LevelStore(nodeDatabase(n))
  await store.open()
  try {
    const ledger = new TokenLedger(store, sha3Hex)
    const repos = levelTokenRepositories(store)
    const rec = await store.collection<TokenRecord>(Collections.tokens).get(o.tokenId)
    if (rec === undefined) throw new Error(`token ${o.tokenId} is not stored on that node`)
    const latest = await repos.blocks.latest(o.tokenId)
    if (latest === undefined) throw new Error(`token ${o.tokenId} has no chain on that node`)
    const [prevEnv] = await repos.blocks.envelopes([latest])
    const previous = decodeBlockEnvelope(prevEnv!)
    const entry = nextTokenEntry(previous, o.tokenId)
    const unsigned = createBlock({
      transactionType: o.type ?? TransactionType.CONTRACT_COMMITTED,
      owner: o.did,
      transInfo: { comment: `committed at ${new Date().toISOString()}`, tokens: { [o.tokenId]: entry } },
      childTokens: []
    })
    const key = liteKeyFromMnemonic(o.mnemonic, 0)
    const block = setSignature(unsigned, o.did, bytesToHex(signMessage('secp256k1', key.privateKey, utf8(unsigned.hash))))
    const envelope = encodeBlockEnvelope(block)
    const now = Date.now()
    const br = blockRecordOf(o.tokenId, block, now)
    const blockId = formatBlockId(Number(entry.blockNumber), block.hash)
    await ledger.commit({
      tokens: [{ record: { ...rec, latestBlockId: blockId, latestBlockNumber: Number(entry.blockNumber), updatedAt: now }, expect: { latestBlockId: rec.latestBlockId } }],
      blocks: [{ record: br, envelope }]
    })
    return blockId
  } finally {
    await store.close()
  }
}

/**
 * Smart-contract operations carried by the NFT path of the transfer protocol (docs/protocol.md,
 * "Smart contracts"). A contract is a single-token chain: a deploy ("09") records the first state,
 * each execution ("10") the next one. The block's key "9" (smart-contract data) holds the state
 * record {data, state, output, stateHash}. The initiator runs the contract and proposes the record;
 * every quorum runs it again from the chain's latest state and votes no unless it gets the very same
 * record, so determinism is checked, not assumed.
 */
import type { ContractOutcome } from '../contracts/abi.js'
import { outcomeMessage } from '../contracts/abi.js'
import type { DecodedContract } from '../tokenchain/contract.js'
import { decodeBlockEnvelope } from '../tokenchain/block.js'
import { floatToMilliExact } from '../tokenchain/amount.js'
import { cidV0ForContent, smartContractTokenId } from '../tokenchain/token-id.js'
import { sha3Hex } from '../tokenchain/hash.js'
import { ContractType, TokenType, tokenKindOf } from '../tokenchain/types.js'
import type { ChainTip } from '../tokenchain/validate.js'
import { stateKey, type ChainBundle, type NftOp, type ScCode } from './types.js'
import { ErrorCode, RbtError } from '../util/errors.js'

export const SC_TOKEN_TYPE: number = TokenType.SMART_CONTRACT
export const isScTokenType = (t: number): boolean => tokenKindOf(t) === 'smart-contract'
export const isScContractType = (t: number): boolean => t === ContractType.SC_DEPLOY || t === ContractType.SC_EXECUTE

export type { ScCode, ScOpPart } from './types.js'

/** What runs contracts (contracts/sandbox.ts ContractEngine). */
export interface ScRunner { run: (binary: Uint8Array, state: string, input: string) => Promise<ContractOutcome> }

export interface ScStateRecord { data: string, state: string, output: string, stateHash: string }

export const scStateHash = (state: string): string => sha3Hex(state)

/** The canonical text of a state record (fixed key order). */
export function encodeScRecord (data: string, state: string, output: string): string {
  return JSON.stringify({ data, state, output, stateHash: scStateHash(state) } satisfies ScStateRecord)
}

export function parseScRecord (text: string | undefined): ScStateRecord | undefined {
  if (text === undefined || text === '') return undefined
  try {
    const r = JSON.parse(text) as Partial<ScStateRecord>
    if (typeof r.data === 'string' && typeof r.state === 'string' && typeof r.output === 'string' && typeof r.stateHash === 'string' && encodeScRecord(r.data, r.state, r.output) === text) return r as ScStateRecord
  } catch { /* not a record */ }
  return undefined
}

/** The latest state of a contract chain (block envelopes, genesis first); '' for an empty chain. */
export function latestScState (chain: readonly Uint8Array[]): string {
  if (chain.length === 0) return ''
  const rec = parseScRecord(decodeBlockEnvelope(chain[chain.length - 1]).content.smartContractData)
  if (rec === undefined) throw new Error('the latest block of the contract carries no state record')
  return rec.state
}

/** Runs the call the way every party does: the new record, or the reason it fails. */
export async function computeScRecord (runner: ScRunner, binary: Uint8Array, prevState: string, data: string): Promise<{ record: string } | { error: string }> {
  const o = await runner.run(binary, prevState, data)
  if (o.kind !== 'ok') return { error: outcomeMessage(o) }
  return { record: encodeScRecord(data, o.state, o.output) }
}

/** Parses and checks contract files against the id: CID(descriptor) = id, CID(binary) = binaryCodeHash. */
export function checkScCode (scId: string, code: ScCode | undefined): { did: string } | string {
  if (code === undefined || typeof code.descriptor !== 'string' || !(code.binary instanceof Uint8Array)) return 'the contract code is missing'
  if (cidV0ForContent(code.descriptor) !== scId) return 'the contract descriptor does not hash to the contract id'
  let d: Record<string, unknown>
  try { d = JSON.parse(code.descriptor) as Record<string, unknown> } catch { return 'the contract descriptor is not JSON' }
  const { binaryCodeHash, rawCodeHash, schemaCodeHash, did } = d
  if (typeof binaryCodeHash !== 'string' || typeof rawCodeHash !== 'string' || typeof did !== 'string') return 'the contract descriptor is malformed'
  if (smartContractTokenId({ binaryCodeHash, rawCodeHash, schemaCodeHash: typeof schemaCodeHash === 'string' ? schemaCodeHash : '', did }) !== scId) return 'the contract descriptor is not canonical'
  if (cidV0ForContent(code.binary) !== binaryCodeHash) return 'the contract binary does not match the descriptor'
  return { did }
}

export interface ScValidationInput {
  contract: DecodedContract
  op: NftOp | undefined
  code: ScCode | undefined
  bundle: ChainBundle
  sender: string
  receiver: string
  runner: ScRunner | undefined
  /** validates the whole chain of a token in the bundle */
  tip: (tokenId: string) => Promise<ChainTip>
}

/**
 * A quorum's checks of a contract deploy or execution: the contract states the operation, the code
 * matches the id (a deploy: by the deployer), an execution continues the chain's latest state, and
 * running the contract gives exactly the proposed state record.
 */
export async function validateScOp (i: ScValidationInput): Promise<string | { valueMilli: number, state: string }> {
  const { op, contract, sender } = i
  const sc = op?.sc
  if (op === undefined || sc === undefined || typeof sc.record !== 'string') return 'smart-contract transaction without its state record'
  if (i.runner === undefined) return 'this quorum does not run smart contracts'
  const ti = contract.content.transInfo
  const tokens = Object.entries(ti.transTokens ?? {})
  if (tokens.length !== 1) return 'a smart-contract transaction carries exactly one contract'
  const [tokenId, t] = tokens[0]
  if (tokenId !== op.nftId || ti.scToken !== op.nftId) return 'the contract names another smart contract'
  if ((ti.scData ?? '') !== (op.data ?? '')) return 'the contract carries other call data'
  if (!isScTokenType(t.tokenType)) return `token type ${t.tokenType} is not a smart contract`
  if (i.receiver !== sender) return 'a smart-contract transaction moves nothing: initiator and receiver are the same DID'
  const v = floatToMilliExact(t.tokenValue)
  if (v === undefined || v <= 0 || v !== op.valueMilli) return `bad smart-contract value ${t.tokenValue}`
  const deploy = contract.content.type === ContractType.SC_DEPLOY
  if (deploy !== (op.op === 'deploy')) return 'contract type and smart-contract operation disagree'
  const code = checkScCode(tokenId, i.code)
  if (typeof code === 'string') return code
  let prevState = ''
  let state: string
  if (deploy) {
    if (ti.deployer !== sender) return 'the contract does not name the deployer'
    if (t.blockId !== undefined && t.blockId !== '') return 'a deploy starts a new chain'
    if (code.did !== sender) return `smart contract ${tokenId} was generated by ${code.did}, not by the deployer ${sender}`
    state = stateKey(tokenId, '')
  } else {
    if (ti.executor !== sender) return 'the contract does not name the executor'
    const tip = await i.tip(tokenId)
    if (!isScTokenType(tip.tokenType)) return `token ${tokenId} is not a smart contract`
    if (tip.blockId !== t.blockId) return `smart contract ${tokenId}: the contract continues block ${String(t.blockId)}, the chain ends at ${tip.blockId}`
    const chainValue = tip.value !== undefined ? floatToMilliExact(tip.value) : undefined
    if (chainValue !== v) return `smart contract ${tokenId} is worth ${String(tip.value)} RBT, the contract says ${t.tokenValue}`
    try { prevState = latestScState(i.bundle.chains[tokenId]) } catch (e) { return e instanceof Error ? e.message : String(e) }
    state = stateKey(tokenId, tip.blockId)
  }
  const mine = await computeScRecord(i.runner, i.code!.binary, prevState, op.data)
  if ('error' in mine) return mine.error
  if (mine.record !== sc.record) return 'determinism check failed: running the contract gives another state record than the initiator proposed'
  return { valueMilli: v, state }
}

/** The contract type and trans-info fields of a smart-contract transaction (reference keys: scToken, scData, deployer/executor). */
export function scContractFields (op: NftOp, initiator: string): { type: number, fields: { scToken: string, scData: string, deployer?: string, executor?: string } } {
  return op.op === 'deploy'
    ? { type: ContractType.SC_DEPLOY, fields: { scToken: op.nftId, scData: op.data, deployer: initiator } }
    : { type: ContractType.SC_EXECUTE, fields: { scToken: op.nftId, scData: op.data, executor: initiator } }
}

/** The sender's check before an execution is locked: the contract's chain is here, idle, and the record was computed on its latest block. */
export function scExecutable (current: { tokenType: number, status: string, latestBlockId: string } | undefined, op: NftOp): string {
  if (current === undefined || !isScTokenType(current.tokenType) || current.latestBlockId === '') throw new RbtError(ErrorCode.NOT_FOUND, `smart contract ${op.nftId} is not deployed or its chain is not on this node (subscribe to it first)`)
  if (current.status === 'Locked') throw new RbtError(ErrorCode.CONFLICT, `smart contract ${op.nftId} is held by another transaction on this node; retry`)
  if (op.sc?.base !== current.latestBlockId) throw new RbtError(ErrorCode.CONFLICT, `smart contract ${op.nftId} moved on while the call was prepared; retry`)
  return current.latestBlockId
}

/** Result payloads of the operator routes (types only: the client imports them). See docs/api.md, "Operator features". */

/** One Locked token the release looked at. */
export interface LockedTokenItem {
  token: string
  did: string
  /** RBT */
  value: number
  /** the transaction that locked it (null when the token names none) */
  transaction_id: string | null
  /** this node's sender record of that transaction: PREPARING, SIGNING, COMMITTING, COMMITTED, ABORTED, or UNKNOWN (none) */
  record_state: string
  reason: string
}

/** POST /svc/v1/tokens/release_locked */
export interface ReleaseLockedResult {
  released: LockedTokenItem[]
  kept: LockedTokenItem[]
}

/** The first block of a chain that failed validation. */
export interface BadBlock {
  /** the chain it belongs to: the token asked for, or an ancestor (a part token's parent, an FT's backing) */
  token: string
  block_number: number
  /** `<number>-<hash>` when the node stores that block, else null */
  block_id: string | null
  /** which check failed (genesis, hash, link, signature, owner, parts, ...) */
  check: string
  reason: string
}

export interface ChainValidationItem {
  token: string
  valid: boolean
  /** blocks in the token's own chain */
  length: number
  /** the newest blocks of the chain that were checked: `length` unless a block count asked for fewer */
  validated_blocks: number
  bad_block: BadBlock | null
}

/** GET /svc/v1/tokens/validate_chain */
export interface ValidateChainResult {
  did: string
  checked: number
  valid: number
  invalid: number
  tokens: ChainValidationItem[]
}

/** GET /svc/v1/quorums/pledged_tokens: one item per token a quorum DID of this node pledged. */
/** Two spends of one token state this node saw, with the proof it keeps (GET /svc/v1/double-spends). */
export interface DoubleSpendItem {
  id: string
  token: string
  /** the state spent twice: `<token>@<block id>` of its last quorum-signed block (markers: the state hash) */
  state: string
  state_hash: string
  /**
   * 'blocks': two valid blocks spend it; 'markers': two verified spent markers name different
   * transactions; 'certificates': arbiters' verified grants of the state hold it for two transactions
   */
  evidence: 'blocks' | 'markers' | 'certificates'
  /** the two transactions (a burn: its block hash) */
  spent_by: string[]
  /** the two spending blocks, base64 envelopes (evidence 'blocks') */
  blocks?: string[]
  /** the two markers (evidence 'markers') */
  markers?: Array<{ txid: string, blockId: string, quorum: string, sig?: string }>
  /**
   * the two certificates (evidence 'certificates'): per transaction, the arbiters whose grants of
   * the state were seen and their grants, each signed by the arbiter's peer key (`final`: a grant
   * its arbiter signed as never undone by a release)
   */
  certificates?: Array<{ txid: string, arbiters: string[], grants: EvidenceGrantItem[] }>
  /** the arbiters that granted both transactions (evidence 'certificates') */
  granted_twice?: string[]
  /** those of them this node no longer trusts: both of their grants are final, proof that they granted twice (their grants no longer count toward any claim here) */
  distrusted?: string[]
  /** the role of this node that saw them: receiver, quorum, sync or markers */
  seen_by: string
  /** when (ISO time) */
  seen_at: string
}

/**
 * An arbiter's signed grant or seal kept as evidence: `txid` holds the states; a grant names the
 * claim (quorum, nonce, for_tx), a seal (`seal`) is signed over the holder and the states only
 * (docs/protocol.md, "Seals"); `final`: a seal, which no release undoes.
 */
export interface EvidenceGrantItem { peer: string, sig: string, txid: string, states: string[], quorum?: string, nonce?: string, forTx?: string, seal?: true, final?: true }

/** An arbiter this node no longer trusts, with the proof (GET /svc/v1/arbiters/distrusted). */
export interface DistrustedArbiterItem {
  /** its peer id */
  peer: string
  /** the state it granted twice (state hash) */
  state_hash: string
  /** the two transactions it granted the state to */
  transactions: string[]
  /** its two final grants, each signed with its peer key (the proof anyone can check from the peer id) */
  grants: EvidenceGrantItem[]
  /** the double-spend record the proof comes from (GET /svc/v1/double-spends) */
  conflict: string
  /** when (ISO time) */
  since: string
}

export interface PledgedTokenItem {
  did: string
  token: string
  /** the transaction the pledge backs */
  transaction_id: string
  /** the token states the transaction created (`<token>@<n>-<hash>` block ids): when one moves on, the pledge is released */
  token_state: string[]
  /** when the pledge period ends (ISO time) */
  release_at: string
}

/** GET /svc/v1/node/tx_counts: per DID hosted here, as the reference's get-by-node. */
export interface TxCountItem { DID: string, TxnSend: number, TxnReceived: number }

/** POST /svc/v1/quorums/run_unpledge */
export interface RunUnpledgeResult {
  /** RBT released by this run */
  released: number
  pledges_released: number
  tokens: string[]
  /** pledges still held after the run */
  pledges_held: number
}

/** POST /svc/v1/tx/self_transfer, final answer */
export interface SelfTransferResult {
  transactionID: string
  /** the tokens re-issued (Free again at the new block) */
  tokens: string[]
  /** RBT */
  amount: number
  /** Free RBT tokens old enough that were left for a later run (at most MAX per transaction) */
  remaining: number
}

/** One claimant of a claim, with its evidence. */
export interface TokenClaimantItem {
  peer: string
  quorum: string
  /** the transaction it claimed for (the holder's txid, or the spender of a part's burnt ancestor) */
  transaction_id: string
  /** the claim's nonce and the quorum's signature over it (null in claims written before claims were signed) */
  nonce: string | null
  signature: string | null
}

/** One state of the token and what this node, as an arbiter, holds on it. */
export interface TokenClaimItem {
  /** `<token>@<block id>` ('' block: the genesis state) */
  state: string
  state_hash: string
  /** the claim held here, or null */
  claim: {
    transaction_id: string
    /** open: held while its transaction runs; committed: kept for good */
    status: 'open' | 'committed'
    granted_at: string
    last_asked_at: string | null
    asks: number
    claimants: TokenClaimantItem[]
  } | null
  /** the spent marker of the state known here (verified), or null */
  marker: { transaction_id: string, block_id: string, quorum: string } | null
}

/** GET /svc/v1/tokens/claims */
export interface TokenClaimsResult {
  token: string
  states: TokenClaimItem[]
}

/** One arbiter registration as this node counts it (docs/protocol.md, "The arbiter committee"). */
export interface ArbiterItem {
  did: string
  peer: string
  /** seated (counted), maturing (verified, younger than the maturity delay), left, lapsed (its stake was spent), replaced (a later registration of the DID stands) */
  state: 'seated' | 'maturing' | 'left' | 'lapsed' | 'refused' | 'replaced'
  registered_at: string
  /** the staked tokens, each at its block */
  stake: Array<{ token: string, block: string }>
  why?: string
}

/** The committee as this node counts it. */
export interface ArbitersResult {
  /** whether the committee stands for the peers as the claims' arbiters (a charter counts: `minimum` seats once stood together) */
  in_force: boolean
  seats: number
  minimum: number
  /** the charter this node holds: the DIDs whose joins made it, and when it counts from */
  charter?: { dids: string[], in_force_from: string }
  registrations: ArbiterItem[]
}

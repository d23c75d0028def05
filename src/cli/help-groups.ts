/**
 * `rbtnode help` by what an operator does. Verbs not listed here (a verb added later) are shown
 * under "More"; verbs this node does not do are hidden from the list (still accepted).
 */
export const HELP_GROUPS: ReadonlyArray<{ title: string, verbs: readonly string[] }> = [
  { title: 'GET STARTED', verbs: ['testnet', 'testnet:status', 'testnet:stop'] },
  { title: 'NODE', verbs: ['run', 'shutdown', 'status', 'node-status', 'get-peer-id', 'ping', 'addbootstrap', 'getallbootstrap', 'removebootstrap', 'removeallbootstrap', 'addpeerdetails', 'repair'] },
  { title: 'DIDS', verbs: ['createdid', 'createdidfrompubkey', 'registerdid', 'getalldid'] },
  { title: 'TOKENS AND TRANSFERS', verbs: ['generatetestrbt', 'generatefaucetrbt', 'transferrbt', 'self-transfer-rbt', 'getaccountinfo', 'getalltokens', 'gettxndetails', 'get-by-node', 'dumptokenchain', 'decodetokenchain', 'validatetokenchain', 'releaseAllLockedTokens'] },
  { title: 'NFTS', verbs: ['create-nft', 'deploy-nft', 'execute-nft', 'fetch-nft', 'subscribe-nft', 'get-nfts-by-did', 'getallnft', 'dump-nft-tokenchain'] },
  { title: 'FTS', verbs: ['create-ft', 'transfer-ft', 'get-ft-info-by-did'] },
  { title: 'SMART CONTRACTS', verbs: ['generatesct', 'deploysmartcontract', 'executesmartcontract', 'fetchsct', 'subscribesct', 'getsmartcontractdata', 'dumpsmartcontracttokenchain'] },
  { title: 'QUORUMS', verbs: ['setupquorum', 'addquorum', 'getallquorum', 'removeallquorum', 'checkQuorumStatus', 'getpledgedtokendetails', 'run-unpledge', 'token-claims', 'double-spends', 'distrusted-arbiters', 'arbiters', 'arbiter-register'] },
  { title: 'EXPLORER AND SYNC', verbs: ['setupservice', 'synctransactionchain', 'syncwallet'] }
]

export const MORE_GROUP = 'MORE'

/** Command ids grouped in HELP_GROUPS order (each group's own order), then the rest under MORE. */
export function groupCommands<C extends { id: string }> (commands: readonly C[]): Array<{ title: string, commands: C[] }> {
  const byId = new Map(commands.map((c) => [c.id, c]))
  const used = new Set<string>()
  const out: Array<{ title: string, commands: C[] }> = []
  for (const g of HELP_GROUPS) {
    const cs = g.verbs.map((v) => byId.get(v)).filter((c): c is C => c !== undefined)
    for (const c of cs) used.add(c.id)
    if (cs.length > 0) out.push({ title: g.title, commands: cs })
  }
  const rest = commands.filter((c) => !used.has(c.id))
  if (rest.length > 0) out.push({ title: MORE_GROUP, commands: rest })
  return out
}

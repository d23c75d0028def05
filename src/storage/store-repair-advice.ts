import { basename, dirname } from 'node:path'

/**
 * What an operator does about a damaged database at `location` (a node's `<-p>/Rubix/<net>/db`):
 * the repair command with the flags that find it, and where lost tokens come back from.
 */
export function damagedStoreAdvice (location: string): string {
  const net = basename(dirname(location))
  const rubix = dirname(dirname(location))
  const known = basename(location) === 'db' && basename(rubix) === 'Rubix' && (net === 'TestNet' || net === 'MainNet')
  const cmd = known
    ? `rbtnode repair -p ${dirname(rubix)}${net === 'TestNet' ? ' -testNet' : ''}`
    : `rbtnode repair -db ${location}`
  return `To bring it back: with the node stopped, run \`${cmd}\`; it rebuilds what LevelDB can recover, audits the ledger and lists what is missing. ` +
    'Tokens of a DID that are missing come back from a fullnode once the node runs again: `rbtnode syncwallet -did <DID>` (docs/operations.md, "A damaged store").'
}

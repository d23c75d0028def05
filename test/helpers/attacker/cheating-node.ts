import { readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startNode, type StartNodeOptions } from '../../../src/index.js'
import { SignRound } from '../../../src/consensus/sender-sign.js'
import { PrepareRound } from '../../../src/consensus/sender-prepare.js'
import { SenderDelivery } from '../../../src/consensus/sender-delivery.js'
import type { ConsensusTransport } from '../../../src/consensus/messages.js'
import { SenderContext, type Vote } from '../../../src/consensus/sender-context.js'
import { b64, unb64, type OutgoingRecord } from '../../../src/consensus/records.js'
import { decodeBlockEnvelope, encodeBlockEnvelope, setSignature, type Block } from '../../../src/tokenchain/block.js'
import { liteKeyFromMnemonic } from '../../../src/wallet/bip39.js'
import { bytesToHex } from '../../../src/wallet/bytes.js'
import { signMessage } from '../../../src/wallet/signing.js'

/**
 * The cheating owner's node (docs/security.md, "Threat model": he runs changed code): rbtnode's own
 * code, started in this process as `rbtnode run` would start it (same flags), with the sender's
 * steps changed as RBTNODE_CHEAT says (comma-separated):
 *
 * - `ghost_credit` (case 3): every block this node builds carries one credit more, the owner's own
 *   DID signing the transaction id, and the owner's signature of the block beside the quorums'
 *   once they signed (in the block it keeps and the one it delivers): a credit signer that is no
 *   quorum and was never asked to vote.
 * - `sign_burns` (case 4): every PREPARE goes without `asked` (the quorums are not told who else
 *   votes), so no quorum claims before SIGN.
 *
 * The owner's key comes from `<data dir>/cheat.json` (`{ did, mnemonic }`), read when a block is
 * built: the bench writes it once the wallet exists. Used by test/helpers/attacker/attacks.ts
 * through NodeProcess's `entry` option; never part of the package.
 */
const cheats = new Set((process.env.RBTNODE_CHEAT ?? '').split(',').filter((s) => s !== ''))
const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s)

/** Parses `run -p dir -n 3 -port 1 -testNet -mdns=false …` as the run command's flags. */
export function runFlags (argv: readonly string[]): StartNodeOptions {
  const flags: Record<string, string | number | boolean> = {}
  const numeric = new Set(['n', 'port', 'swarmPort', 'grpcPort', 'legacyPort'])
  const args = argv[0] === 'run' ? argv.slice(1) : argv
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!
    if (!a.startsWith('-')) throw new Error(`unexpected argument ${a}`)
    const body = a.replace(/^--?/, '')
    const eq = body.indexOf('=')
    let name: string
    let value: string | boolean
    if (eq >= 0) { name = body.slice(0, eq); value = body.slice(eq + 1) } else if (args[i + 1] !== undefined && !args[i + 1]!.startsWith('-')) { name = body; value = args[++i]! } else { name = body; value = true }
    if (value === 'true') value = true
    if (value === 'false') value = false
    flags[name] = numeric.has(name) && typeof value === 'string' ? Number(value) : value
  }
  return flags as StartNodeOptions
}

interface Owner { did: string, privateKey: Uint8Array }

function owner (dir: string): Owner {
  const o = JSON.parse(readFileSync(join(dir, 'cheat.json'), 'utf8')) as { did: string, mnemonic: string }
  return { did: o.did, privateKey: liteKeyFromMnemonic(o.mnemonic, 0).privateKey }
}

const sign = (key: Uint8Array, message: string): string => bytesToHex(signMessage('secp256k1', key, utf8(message)))

/** A getter of `transport` on a sender part's prototype that hands out `wrap(original)`, made once per transport. */
function wrapTransport (proto: object, wrap: (t: ConsensusTransport) => ConsensusTransport): void {
  const base = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(proto), 'transport') ?? Object.getOwnPropertyDescriptor(proto, 'transport')
  if (base?.get === undefined) throw new Error('sender parts have no transport getter')
  const made = new WeakMap<ConsensusTransport, ConsensusTransport>()
  Object.defineProperty(proto, 'transport', {
    configurable: true,
    get (this: unknown) {
      const t = base.get!.call(this) as ConsensusTransport
      let w = made.get(t)
      if (w === undefined) { w = wrap(t); made.set(t, w) }
      return w
    }
  })
}

export function installCheats (dir: string): void {
  if (cheats.has('ghost_credit')) {
    type Build = (rec: OutgoingRecord, contract: Uint8Array, chosen: Vote[]) => Promise<Block>
    const proto = SignRound.prototype as unknown as { buildBlock: Build }
    const build = proto.buildBlock
    proto.buildBlock = async function (this: unknown, rec, contract, chosen) {
      const o = owner(dir)
      const first = chosen[0]
      if (first === undefined || chosen.some((v) => v.quorumDid === o.did)) return await build.call(this, rec, contract, chosen)
      const ghost = { ...first, quorumDid: o.did, credit: { did: o.did, hash: rec.txid, signType: '0', signature: '', privSignature: sign(o.privateKey, rec.txid) } } as Vote
      process.stderr.write(`cheat ghost_credit: transaction ${rec.txid} carries a credit of ${o.did}\n`)
      return await build.call(this, rec, contract, [...chosen, ghost])
    }
    // the owner's signature beside the quorums' once they signed: in the block the decision keeps
    // (what this node commits and announces) and in the one delivered
    const ghostSigned = (bytes: Uint8Array): Uint8Array => {
      const o = owner(dir)
      const b = decodeBlockEnvelope(bytes)
      const ghosted = (b.content.quorumSignatures ?? []).some((c) => c.did === o.did) && b.signatures[o.did] === undefined
      return ghosted ? encodeBlockEnvelope(setSignature(b, o.did, sign(o.privateKey, b.hash))) : bytes
    }
    const ctx = SenderContext.prototype as unknown as { decide: (rec: OutgoingRecord, patch: { block: string }, ...rest: unknown[]) => Promise<void> }
    const decide = ctx.decide
    ctx.decide = async function (this: unknown, rec, patch, ...rest) {
      return await decide.call(this, rec, { ...patch, block: b64(ghostSigned(unb64(patch.block))) }, ...rest)
    }
    const delivery = SenderDelivery.prototype as unknown as { complete: (txid: string, wait: boolean, decided?: { rec: OutgoingRecord, block: Uint8Array }) => Promise<unknown> }
    const complete = delivery.complete
    delivery.complete = async function (this: unknown, txid, wait, decided) {
      return await complete.call(this, txid, wait, decided !== undefined ? { ...decided, block: ghostSigned(decided.block) } : undefined)
    }
  }
  if (cheats.has('sign_burns')) {
    wrapTransport(PrepareRound.prototype, (t) => ({
      ...t,
      prepare: async (r) => {
        const { asked: _asked, ...rest } = r
        return await t.prepare(rest)
      }
    }))
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const flags = runFlags(process.argv.slice(2))
  installCheats(flags.p ?? process.cwd())
  const node = await startNode({ ...flags, log: (line) => { process.stdout.write(`${line}\n`) } })
  process.stdout.write(`cheating node (${[...cheats].join(', ') || 'no cheat'}) running: ${node.url}, peer ${node.peerId}\n`)
  let stopping = false
  const stop = (): void => {
    if (stopping) return
    stopping = true
    node.stop().then(() => { process.exit(0) }, () => { process.exit(1) })
  }
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)
  await node.closed
  process.exit(0)
}

import { Flags } from '@oclif/core'
import { BaseCommand, UsageError } from '../src/cli/base-command.js'
import { cliDeps } from '../src/cli/deps.js'

function whole (v: string | undefined, name: string, dflt: number): number {
  if (v === undefined || v === '') return dflt
  if (!/^\d+$/.test(v)) throw new UsageError(`-${name} must be a whole number, got "${v}"`)
  return Number(v)
}

export default class Testnet extends BaseCommand {
  static override summary = 'Start a local test network in one command: quorums set up, funded user DIDs, commands to paste'
  static override description = [
    'Starts quorum and user nodes as `rbtnode run` processes on 127.0.0.1 (discovery off, explicit bootstrap) on a',
    'test network with a freshly generated swarm key. The first start creates, funds and pledges a DID per quorum,',
    'sets up the quorum role, writes one quorum list on every node and creates a funded DID on each user node; then it',
    'prints a table (node, API URL, peer id, DID, balance), the password in use and a transfer and a balance query to paste.',
    'It stays in the foreground: Ctrl-C or SIGTERM stops every node. Started again with the same -p, the same network',
    'starts with its state and nothing is set up again (-fresh removes it and sets up a new one).',
    '`rbtnode testnet status` and `rbtnode testnet stop` (same -p) work from another terminal. A node that dies is',
    'named with the last lines of its log (<-p>/<node>/node.log); the others keep running.',
    'API ports are -basePort + i, swarm ports -basePort + 500 + i.'
  ].join('\n')

  static override flags = {
    quorums: Flags.string({ description: 'quorum nodes (default 7, at least 5)', helpGroup: 'TESTNET' }),
    users: Flags.string({ description: 'user nodes, one funded DID each (default 2)', helpGroup: 'TESTNET' }),
    basePort: Flags.string({ description: 'first API port (default 21000); swarm ports from basePort + 500', helpGroup: 'TESTNET' }),
    fund: Flags.string({ description: 'whole test RBT minted for each user DID (default 10; each quorum DID gets as much, at least 10)', helpGroup: 'TESTNET' }),
    fresh: Flags.boolean({ description: 'remove the network in -p and set up a new one', allowNo: true, helpGroup: 'TESTNET' })
  }

  static override examples = [
    '<%= config.bin %> testnet',
    '<%= config.bin %> testnet -quorums 5 -users 3 -p ./mynet',
    '<%= config.bin %> testnet -p ./mynet --json',
    '<%= config.bin %> testnet status -p ./mynet',
    '<%= config.bin %> testnet stop -p ./mynet'
  ]

  async run (): Promise<void> {
    const f = this.flags as typeof this.flags & { quorums?: string, users?: string, basePort?: string, fund?: string, fresh?: boolean }
    const { Testnet: Net, DEFAULT_BASE_PORT, SWARM_PORT_OFFSET, ephemeralOverlap } = await import('../src/testnet/testnet.js')
    const { removeSupervisor, writeSupervisor } = await import('../src/testnet/state.js')
    const { summaryText, testnetProgress } = await import('../src/cli/testnet-render.js')
    const dir = f.p ?? './testnet'
    const opts = {
      dir,
      quorums: whole(f.quorums, 'quorums', 7),
      users: whole(f.users, 'users', 2),
      basePort: whole(f.basePort, 'basePort', DEFAULT_BASE_PORT),
      fund: whole(f.fund, 'fund', 10),
      fresh: f.fresh === true
    }
    const deps = cliDeps()
    const overlap = ephemeralOverlap(opts.basePort, opts.quorums + opts.users)
    if (overlap !== undefined) this.info(`the ports from ${opts.basePort} fall in this system's ephemeral range (${overlap.low}-${overlap.high}), which outgoing connections take ports from: a node may find its port taken; a -basePort below ${overlap.low - SWARM_PORT_OFFSET - opts.quorums - opts.users} avoids it`)
    const progress = testnetProgress(deps.stderr, deps.isTTY.stderr && !f.json, this.errPaint)
    // a signal during set-up stops the nodes started so far (they run in process groups of their own)
    const setUp = new AbortController()
    let stopping: Promise<void> | undefined
    let net: Awaited<ReturnType<typeof Net.open>> | undefined
    process.on('SIGINT', () => { if (net === undefined) setUp.abort(); else void stop('SIGINT') })
    process.on('SIGTERM', () => { if (net === undefined) setUp.abort(); else void stop('SIGTERM') })
    try {
      net = await Net.open({ ...opts, signal: setUp.signal }, progress)
    } catch (e) {
      if (e instanceof RangeError) throw new UsageError(e.message)
      throw e
    }
    const running = net
    if (net.restarted && [f.quorums, f.users, f.basePort, f.fund].some((v) => v !== undefined)) {
      this.info(`started the network of ${net.dir} as it was set up (${net.quorumNodes.length} quorums, ${net.userNodes.length} users, API ports from ${net.state.basePort}): -quorums, -users, -basePort and -fund apply to a new network (-fresh)`)
    }
    let stopped!: () => void
    const done = new Promise<void>((resolve) => { stopped = resolve })
    const stop = async (why: string): Promise<void> => {
      stopping ??= (async () => {
        this.info(`${why}: stopping ${running.nodes.length} nodes`)
        await running.stop()
        removeSupervisor(running.dir)
        this.info('test network stopped')
        stopped()
      })()
      await stopping
    }
    net.onNodeExit((node, code, signal) => {
      this.errorLine(`${node.spec.name} exited (${signal ?? `code ${String(code)}`}); the others keep running. The last lines of ${node.logPath}:`)
      deps.stderr(node.logTail(15).split('\n').map((l) => `  ${l}\n`).join(''))
    })
    writeSupervisor(net.dir, { pid: process.pid, started: new Date().toISOString(), nodes: net.nodes.map((n) => ({ name: n.spec.name, pid: n.pid ?? 0 })) })
    const summary = await net.summary()
    if (f.json) this.print(JSON.stringify({ status: true, message: net.restarted ? 'test network started again' : 'test network set up', result: summary }, null, 2))
    else this.print(summaryText(summary, this.outPaint))
    await done
  }
}

import { BaseCommand, UsageError } from '../src/cli/base-command.js'

function intFlag (v: string | undefined, name: string): number | undefined {
  if (v === undefined || v === '') return undefined
  if (!/^\d+$/.test(v)) throw new UsageError(`-${name} must be an unsigned integer, got "${v}"`)
  return Number(v)
}

export default class Run extends BaseCommand {
  static override summary = 'Start the node: HTTP API on 20000+n, libp2p on TCP 4002+n'
  static override description = [
    'Boots one node process: the HTTP API (bound to 127.0.0.1 unless -host says otherwise) and an embedded',
    'js-libp2p host (TCP, Noise, Yamux, private network from the swarm key, identify, ping, Kad-DHT, gossipsub).',
    'Data lives in <-p>/Rubix/MainNet (or TestNet); the encrypted config file, peer key and database are created',
    'on first start. -grpcPort is accepted for compatibility only: this node serves no gRPC.',
    'Peers on the same LAN or machine are found by mDNS and connected without addbootstrap when they use the',
    'same swarm key; -mdns=false turns discovery off (so do RBTNODE_MDNS=0 and rbtnode.mdns: false in the config).',
    'Log lines go to stderr as `<time> [LEVEL] <message>`, or one JSON object per line with -logFormat json;',
    '-logFile <path> appends them to that file too. A start that fails says why in one ERROR line and exits',
    '75 (starting again may help), 78 (the operator must act first) or 70 (an unforeseen error).',
    'Stops gracefully on SIGINT, SIGTERM or POST /svc/v1/node/shutdown.'
  ].join('\n')

  static override examples = [
    '<%= config.bin %> run',
    '<%= config.bin %> run -p node1 -n 1',
    '<%= config.bin %> run -p node2 -n 2 -testNet -testNetKey testswarm.key',
    '<%= config.bin %> run -p node3 -n 3 -port 20103 -swarmPort 4103 -s=false',
    '<%= config.bin %> run -p node4 -n 4 -mdns=false',
    '<%= config.bin %> run -p /var/lib/rbtnode -logFormat json'
  ]

  async run (): Promise<void> {
    const f = this.flags
    // run flags of the reference for what this node does otherwise: refused rather than ignored
    if (f.enableAuth === true) throw new UsageError('-enableAuth (the reference\'s DID logins) is not supported: start the node with -apiAuth and send the token in <-p>/api.cookie as a bearer token (docs/security.md)')
    if (f.arbitaryMode === true) throw new UsageError('-arbitaryMode (locking tokens by hand) is not supported: a transfer locks the tokens it spends, and releaseAllLockedTokens frees those of transfers that can no longer commit')
    if (f.defaultSetup === true) throw new UsageError('-defaultSetup (the reference\'s built-in faucet quorums) is not supported: set the quorum list with addquorum -quorumList <file>')
    const [{ createLogger }, { classifyStartFailure, startFailureLine, EXIT_START_INTERNAL }, { openLogFile }] = await Promise.all([
      import('../src/util/logger.js'), import('../src/cli/start-failure.js'), import('../src/cli/log-file.js')
    ])
    // -logFile: every line on stderr and appended to the file (written before the process exits)
    let file: ReturnType<typeof openLogFile> | undefined
    try {
      file = f.logFile !== undefined && f.logFile !== '' ? openLogFile(f.logFile) : undefined
    } catch (e) {
      // no log but stderr: say so there, with the code of the cause
      const failure = classifyStartFailure(e)
      this.errorLine(startFailureLine(failure))
      process.exit(failure.exitCode)
    }
    const write = (line: string): void => { process.stderr.write(line + '\n'); file?.write(line) }
    let log = createLogger({ painter: this.errPaint, write })
    /** A start that cannot go on: one ERROR line (stderr and the log file), then the exit code of its cause. */
    const fail = (e: unknown, cause?: ReturnType<typeof classifyStartFailure>): never => {
      const failure = cause ?? classifyStartFailure(e)
      log.error(startFailureLine(failure))
      file?.close()
      process.exit(failure.exitCode)
    }
    // an error no code path caught (a rejected promise nobody awaited): logged with its stack, then
    // the process ends with the code of an unforeseen error (Node would print the trace alone, exit 1)
    const fatal = (what: string) => (e: unknown): void => {
      const stack = e instanceof Error && e.stack !== undefined ? e.stack : String(e)
      if (ready) {
        log.error(`${what}, the node stops: ${stack}`)
        file?.close()
        process.exit(EXIT_START_INTERNAL)
      }
      fail(e, { exitCode: EXIT_START_INTERNAL, kind: 'internal', message: `${what}: ${stack}` })
    }
    let ready = false
    process.on('unhandledRejection', fatal('an unhandled rejection'))
    process.on('uncaughtException', fatal('an uncaught exception'))
    let node: import('../src/node/rbt-node.js').RbtNode
    let options: import('../src/config/node-options.js').NodeOptions
    try {
      const { resolveNodeOptions } = await import('../src/config/node-options.js')
      options = resolveNodeOptions({
        c: f.c,
        k: f.k,
        n: intFlag(f.n, 'n'),
        p: f.p,
        s: f.s,
        testNet: f.testNet,
        testNetKey: f.testNetKey,
        grpcPort: intFlag(f.grpcPort, 'grpcPort'),
        port: intFlag(f.port, 'port'),
        host: f.host,
        swarmPort: intFlag(f.swarmPort, 'swarmPort'),
        swarmHost: f.swarmHost,
        legacyPort: intFlag(f.legacyPort, 'legacyPort'),
        fullnode: f.fullnode,
        faucet: f.faucet,
        mdns: f.mdns,
        kubo: f.kubo,
        trustOwnQuorumList: f.trustOwnQuorumList,
        apiAuth: f.apiAuth,
        allowHosts: f.allowHosts,
        corsOrigins: f.corsOrigins,
        logFormat: f.logFormat,
        nftArtifactLimit: f.nftArtifactLimit
      })
      // colour only for text lines on a terminal (this.errPaint is plain otherwise; the file never is)
      if (options.logFormat === 'json') log = createLogger({ format: 'json', write })
      for (const notice of options.notices ?? []) log.warn(notice)
      if (options.grpcPort !== undefined) log.warn(`-grpcPort ${options.grpcPort} ignored: this node serves no gRPC (use the HTTP API)`)
      for (const name of ['grpcAddr', 'grpcSecure', 'logLevel', 'timeout'] as const) {
        if (f[name] !== undefined && f[name] !== false) log.warn(`-${name} ignored: accepted for compatibility with the reference's run (see rbtnode run --help)`)
      }
      const { RbtNode } = await import('../src/node/rbt-node.js')
      node = await RbtNode.init({ options, logger: log })
    } catch (e) {
      if (e instanceof UsageError) throw e
      return fail(e)
    }
    ready = true
    let signals = 0
    const onSignal = (sig: string): void => {
      signals++
      if (signals > 1) { log.warn(`${sig} again: exiting now`); process.exit(130) }
      log.info(`${sig} received`)
      node.close().catch((e) => { log.error(String(e)) })
    }
    process.on('SIGINT', () => { onSignal('SIGINT') })
    process.on('SIGTERM', () => { onSignal('SIGTERM') })
    log.info(`node ${options.nodeIndex} ready (data ${options.dataDir})`)
    await node.closed
    file?.close()
    // Everything is closed; do not wait for stray timers of third-party libraries.
    process.exit(0)
  }
}

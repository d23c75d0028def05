import { Command, Errors, type Interfaces } from '@oclif/core'
import { ApiError } from '../client/api-error.js'
import type { RbtClient } from '../client/rbt-client.js'
import type { Envelope } from '../api/contract/envelope.js'
import { formatLine } from '../util/logger.js'
import { painterFor, plainPainter, type Painter } from '../util/colour.js'
import { globalFlags } from './flags.js'
import { cliDeps } from './deps.js'

export type BaseFlags = Interfaces.InferredFlags<typeof globalFlags>

/** Exit code when a transfer is decided but its delivery (or its sign round) is pending (1: failed, 2: usage). */
export const EXIT_DELIVERY_PENDING = 3

/** A usage problem found by a command itself (exit code 2, like oclif's parse errors). */
export class UsageError extends Error {}

/**
 * Base of every command: the shared flag set, the client, the output contract (log lines on
 * stderr, data on stdout, --json prints the envelope) and error → exit code.
 */
export abstract class BaseCommand extends Command {
  static override baseFlags = globalFlags
  static override strict = true
  protected flags!: BaseFlags
  /** colours of stdout (data) and stderr (log lines): plain unless the stream is a terminal */
  protected outPaint: Painter = plainPainter
  protected errPaint: Painter = plainPainter

  override async init (): Promise<void> {
    await super.init()
    const tty = cliDeps().isTTY
    ;[this.outPaint, this.errPaint] = await Promise.all([painterFor(tty.stdout), painterFor(tty.stderr)])
    const { flags } = await this.parse(this.constructor as typeof BaseCommand)
    this.flags = flags as BaseFlags
  }

  protected info (msg: string): void { cliDeps().stderr(formatLine('INFO', msg, undefined, this.errPaint) + '\n') }
  protected errorLine (msg: string): void { cliDeps().stderr(formatLine('ERROR', msg, undefined, this.errPaint) + '\n') }
  /** Data on stdout; at a terminal DIDs, transaction ids and amounts are coloured (JSON never is). */
  protected print (text: string): void {
    const out = /^\s*[[{]/.test(text) ? text : this.outPaint.text(text)
    cliDeps().stdout(out.endsWith('\n') ? out : out + '\n')
  }

  protected baseUrl (): string {
    const addr = this.flags.addr ?? 'localhost'
    const port = this.flags.port ?? '20000'
    if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535) throw new UsageError(`-port must be a port number, got "${port}"`)
    const host = addr.includes(':') && !addr.startsWith('[') ? `[${addr}]` : addr
    return `http://${host}:${port}`
  }

  protected client (): RbtClient { return cliDeps().makeClient(this.baseUrl(), this.flags.apiToken ?? process.env.RBTNODE_API_TOKEN) }

  /** Standard ending of a client command: --json prints the envelope, otherwise log + print. */
  protected finish<T> (env: Envelope<T>, render?: (result: T) => string | undefined): void {
    if (this.flags.json) {
      this.print(JSON.stringify(env, null, 2))
      return
    }
    this.info(env.message)
    const text = render !== undefined && env.result !== null ? render(env.result) : undefined
    if (text !== undefined && text !== '') this.print(text)
  }

  protected requireFlag (name: keyof BaseFlags, hint?: string): string {
    const v = this.flags[name]
    if (v === undefined || v === '' || typeof v !== 'string') throw new UsageError(`-${name} is required${hint !== undefined ? ': ' + hint : ''}`)
    return v
  }

  override async catch (err: Error & { exitCode?: number, oclif?: { exit?: number } }): Promise<unknown> {
    if (err instanceof Errors.ExitError) throw err
    if (err instanceof ApiError) {
      if (this.flags?.json === true) this.print(JSON.stringify({ status: false, message: err.message, result: err.result ?? null }, null, 2))
      this.errorLine(err.message)
      // a failure that names its transaction is not a refusal: the transfer may still complete (its
      // delivery or sign round is retried, or a storage error came as it was decided): exit 3, the id on stdout
      const txid = (err.result as { transactionID?: unknown } | null)?.transactionID
      if (typeof txid === 'string') {
        if (this.flags?.json !== true) this.print(txid)
        this.exit(EXIT_DELIVERY_PENDING)
      }
      this.exit(1)
    }
    if (err instanceof UsageError) {
      this.errorLine(err.message)
      this.exit(2)
    }
    const exit = err.oclif?.exit
    if (exit !== undefined) {
      // oclif parse errors (missing values, bad types)
      this.errorLine(err.message)
      this.exit(exit)
    }
    this.errorLine(err.message)
    this.exit(1)
  }
}

import { BaseCommand, UsageError } from '../src/cli/base-command.js'
import { cliDeps } from '../src/cli/deps.js'

export default class SetupService extends BaseCommand {
  static override summary = 'Set up the explorer service: the node exports its chain data to a SQL Server, PostgreSQL or SQLite database'
  static override description = 'Defaults: -srvName explorer_service, -dbType SQLServer, -dbAddress localhost, -dbPort 1433 (5432 for PostgreSQL), -dbName ExplorerDB, -dbUsername sa. ' +
    'With -dbType SQLite, -dbName is the database file (relative paths are taken from the node data directory). The password is kept sealed on the node and never shown.'

  static override examples = [
    '<%= config.bin %> setupservice -dbType SQLite -dbName explorer.db',
    '<%= config.bin %> setupservice -dbType PostgreSQL -dbAddress 127.0.0.1 -dbPort 5432 -dbName explorer -dbUsername rbt -dbPassword secret',
    '<%= config.bin %> setupservice -dbAddress sql.example -dbUsername sa -fp'
  ]

  async run (): Promise<void> {
    const f = this.flags
    let password = f.dbPassword
    if (f.fp) {
      const prompter = cliDeps().prompter
      if (!prompter.interactive) {
        if (password === undefined || password === '') throw new UsageError('-fp asks for the database password on the terminal, but there is no terminal: pass it with -dbPassword')
      } else {
        password = await prompter.password('Enter the database password')
      }
    }
    const body = {
      service_name: f.srvName ?? 'explorer_service',
      db_type: f.dbType ?? 'SQLServer',
      db_address: f.dbAddress ?? 'localhost',
      db_name: f.dbName ?? 'ExplorerDB',
      db_username: f.dbUsername ?? 'sa',
      ...(f.dbPort !== undefined ? { db_port: f.dbPort } : {}),
      ...(password !== undefined && password !== '' ? { db_password: password } : {})
    }
    const env = await this.client().call('servicesSetup', { body })
    this.finish(env, (c) => [
      `service   ${c.service_name}`,
      `type      ${c.db_type}`,
      ...(c.db_address !== null ? [`address   ${c.db_address}:${c.db_port ?? ''}`] : []),
      `database  ${c.db_name}`,
      ...(c.db_username !== null ? [`user      ${c.db_username}`, `password  ${c.password_set ? '(set, sealed on the node)' : '(none)'}`] : [])
    ].join('\n'))
  }
}

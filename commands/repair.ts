import { BaseCommand } from '../src/cli/base-command.js'

export default class Repair extends BaseCommand {
  static override summary = 'Repair a damaged database with the node stopped: LevelDB\'s repair, then the ledger\'s derived records rebuilt and audited; prints what was rebuilt, what is missing and which DIDs to sync from a fullnode. Local: asks no node, refuses while a node runs on the data dir'
  static override examples = [
    '<%= config.bin %> repair -p node1',
    '<%= config.bin %> repair -p node2 -testNet --json'
  ]

  async run (): Promise<void> {
    const { resolve, join } = await import('node:path')
    const dataDir = join(resolve(this.flags.p ?? './'), 'Rubix', this.flags.testNet === true ? 'TestNet' : 'MainNet')
    const { repairStore, renderRepairReport } = await import('../src/storage/store-repair.js')
    const report = await repairStore(dataDir)
    const message = report.lossSuspected
      ? `database repaired; some records may be missing: sync ${report.syncDids.length} DID(s) from a fullnode once the node runs (rbtnode syncwallet -did <DID>)`
      : 'database repaired; nothing found missing'
    this.finish({ status: true, message, result: report }, renderRepairReport)
  }
}

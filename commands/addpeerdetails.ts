import { BaseCommand, UsageError } from '../src/cli/base-command.js'

export default class AddPeerDetails extends BaseCommand {
  static override summary = "Map a peer's DID to its peer id (for networks where DIDs cannot be resolved over the DHT)"
  static override examples = ['<%= config.bin %> addpeerdetails -peerID 12D3KooW... -did bafybmi... -didType 4']

  async run (): Promise<void> {
    const PeerID = this.requireFlag('peerID', 'the peer id hosting the DID')
    const DID = this.requireFlag('did', 'the DID')
    let DIDType: number | undefined
    if (this.flags.didType !== undefined) {
      if (!/^[0-4]$/.test(this.flags.didType)) throw new UsageError(`-didType must be 0..4, got "${this.flags.didType}"`)
      DIDType = Number(this.flags.didType)
    }
    const env = await this.client().call('nodeAddPeers', { body: { DID, PeerID, ...(DIDType !== undefined ? { DIDType } : {}) } })
    this.finish(env)
  }
}

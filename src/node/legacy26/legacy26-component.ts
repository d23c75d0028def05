import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import type { ApiGuardComponent } from '../api-guard/api-guard-component.js'
import type { Component, Factory } from '../component/component.js'
import type { ConsensusComponent } from '../consensus/consensus-component.js'
import { closeServer, listen } from '../http/listen.js'
import type { HttpComponent } from '../http/http-component.js'
import type { IdentityComponent } from '../identity/identity-component.js'
import type { P2pComponent } from '../p2p/p2p-component.js'
import type { SigningComponent } from '../signing/signing-component.js'
import type { StorageComponent } from '../storage/storage-component.js'
import type { Legacy26Service } from './legacy-service.js'
import type { RpcClient } from '../../p2p/rpc.js'
import type { ConsensusMethods } from '../consensus/consensus-network.js'

/** The release-2.6 endpoints on their own port (-legacyPort), bound to the API host; nothing without the flag. */
export type Legacy26Component = Component

type Needs = {
  storage: StorageComponent, identity: IdentityComponent, signing: SigningComponent, consensus: ConsensusComponent,
  p2p: P2pComponent, apiGuard: ApiGuardComponent, http: HttpComponent
}

export const legacy26Component: Factory<Needs, Legacy26Component> = (c) => {
  const { options, log } = c.base
  const port = options.legacyPort
  if (port === undefined) return {}
  let server: Server | undefined
  let legacy: Legacy26Service | undefined
  return {
    start: async () => {
      // loaded only by a node started with -legacyPort
      const [{ Legacy26Service }, { createLegacy26App }] = await Promise.all([import('./legacy-service.js'), import('../../api/server/legacy26/app.js')])
      const identity = c.identity.identity
      const service = new Legacy26Service({
        identity,
        config: c.storage.config,
        consensus: c.consensus.require,
        consensusApi: c.http.services().consensus,
        signing: c.signing.signing,
        fetchProof: async (pledger, token, txid) => {
          const rpc = c.p2p.rpc() as RpcClient<ConsensusMethods> | undefined
          if (rpc === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'core not started')
          const { peerId } = await identity.resolvePeer(pledger)
          try {
            return (await rpc.call(peerId, 'cs.powProof', { token, txid }, { timeoutMs: 30_000 })).proof ?? undefined
          } catch (e) {
            throw new RbtError(ErrorCode.PEER_UNREACHABLE, `the node of ${pledger} did not answer for the proof: ${errorMessage(e)}`)
          }
        },
        freeMilli: async (did) => (await c.storage.repos.balances.get(did))?.sums.rbt?.Free ?? 0,
        pledgedFile: join(c.base.layout.root, 'PledgedTokens.json'),
        powLevel: options.legacyPowLevel,
        log
      })
      const app = createLegacy26App(service, { logger: log, guard: c.apiGuard.options(), maxJsonBytes: options.maxJsonBytes })
      server = await listen(app.fetch, options.apiHost, port, 'release-2.6')
      legacy = service
      service.start()
      const addr = server.address() as AddressInfo
      c.base.ownPorts.add(addr.port)
      log.info(`release-2.6 endpoints listening on ${addr.address}:${addr.port} (proof-of-work level ${options.legacyPowLevel})`)
    },
    stop: async () => {
      legacy?.stop()
      if (server !== undefined) await closeServer(server)
    }
  }
}

import { ok } from '../../../contract/envelope.js'
import type { ApiServices } from '../../services.js'
import type { Registrar } from '../../registrar.js'

export function bootstrapRoutes (r: Registrar, s: ApiServices): void {
  r.on('bootstrapAdd', async ({ body }) => ok('Bootstrap peers added successfully', { peers: await s.bootstrap.add(body.peers) }))
  r.on('bootstrapRemove', async ({ body }) => ok('Bootstrap peers removed successfully', { peers: await s.bootstrap.remove(body.peers) }))
  r.on('bootstrapList', async () => ok('Got all the bootstrap peers successfully', { peers: await s.bootstrap.list() }))
  r.on('bootstrapRemoveAll', async () => ok('All bootstrap peers removed successfully', { peers: await s.bootstrap.removeAll() }))
}

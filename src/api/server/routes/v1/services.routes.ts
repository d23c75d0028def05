import { ok } from '../../../contract/envelope.js'
import type { ApiServices, ServicesApi } from '../../services.js'
import { ErrorCode, RbtError } from '../../../../util/errors.js'
import type { Registrar } from '../../registrar.js'

export function serviceRoutes (r: Registrar, s: ApiServices): void {
  const api = (): ServicesApi => {
    if (s.services === undefined) throw new RbtError(ErrorCode.NOT_FOUND, 'no services are available on this node')
    return s.services
  }
  r.on('servicesSetup', async ({ body }) => {
    const cfg = await api().setup(body)
    const where = cfg.db_type === 'SQLite' ? cfg.db_name : `${cfg.db_address ?? ''}:${cfg.db_port ?? ''}/${cfg.db_name}`
    return ok(`Service ${cfg.service_name} set up: exporting to ${cfg.db_type} ${where}; see the node status for its sync state`, cfg)
  })
  r.on('servicesGet', async ({ params }) => ok(`Service ${params.service_name}`, api().get(params.service_name!)))
}

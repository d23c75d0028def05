import { ok } from '../../../contract/envelope.js'
import type { ApiServices, ScApi } from '../../services.js'
import { ErrorCode, RbtError } from '../../../../util/errors.js'
import type { Registrar } from '../../registrar.js'
import { parseUpload } from '../../multipart.js'

export const SC_UPLOAD_FILES = ['binaryCodePath', 'rawCodePath'] as const
/** Whole upload and per file; the service applies the smaller per-kind limits. */
export const SC_ROUTE_LIMITS = { maxBytes: 2 * 1024 * 1024, maxFileBytes: 1024 * 1024 }

export function scRoutes (r: Registrar, s: ApiServices): void {
  const contracts = (): ScApi => {
    if (s.contracts === undefined) throw new RbtError(ErrorCode.NOT_FOUND, 'smart contracts are not served by this node')
    return s.contracts
  }
  r.on('scGenerate', async ({ c }) => {
    const up = await parseUpload(c, SC_UPLOAD_FILES, SC_ROUTE_LIMITS)
    const id = await contracts().generate(up.fields.did ?? '', up.files.binaryCodePath, up.files.rawCodePath, { binary: up.fileNames.binaryCodePath, raw: up.fileNames.rawCodePath })
    return ok('Smart contract generated successfully', id)
  })
  r.on('scList', async () => ok('Smart contracts retrieved successfully', await contracts().list()))
  r.on('scChain', async ({ params }) => ok('Smart contract chain data retrieved successfully', await contracts().chain(params.contract_id)))
  r.on('scSubscribe', async ({ query }) => { await contracts().subscribe(query.smartContractToken); return ok('Smart contract subscribed successfully', null) })
  r.on('scRegisterCallback', async ({ body }) => {
    await contracts().registerCallback(body.CallBackURL, body.SmartContractToken)
    return ok('Callback URL registered successfully', null)
  })
  r.on('scFetch', async ({ query }) => {
    const res = await contracts().fetch(query.smartContractToken)
    return ok(res.message, { path: res.path })
  })
}

import { ok } from '../../../contract/envelope.js'
import type { ApiServices, ScApi } from '../../services.js'
import { ErrorCode, RbtError } from '../../../../util/errors.js'
import type { Registrar } from '../../registrar.js'
import { parseUpload } from '../../multipart.js'
import { SC_ROUTE_LIMITS, SC_UPLOAD_FILES } from '../v1/sc.routes.js'
import { answered, didOf, withKeys } from './answer.js'

/** The reference's `/api` smart-contract routes (legacy-api.md §8) over the /svc/v1 smart-contract, token and transaction services. */
export function legacyScRoutes (r: Registrar, s: ApiServices): void {
  const contracts = (): ScApi => {
    if (s.contracts === undefined) throw new RbtError(ErrorCode.NOT_FOUND, 'smart contracts are not served by this node')
    return s.contracts
  }
  r.on('legacyGenerateSmartContract', async ({ c }) => await answered(async () => {
    // the reference's schema file is accepted and not used: a contract's ABI is in its module
    const up = await parseUpload(c, [...SC_UPLOAD_FILES, 'schemaFilePath'], SC_ROUTE_LIMITS)
    const id = await contracts().generate(up.fields.did ?? '', up.files.binaryCodePath, up.files.rawCodePath, { binary: up.fileNames.binaryCodePath, raw: up.fileNames.rawCodePath })
    return ok('Smart contract generated successfully', id)
  }))
  r.on('legacyDeploySmartContract', async ({ body }) => await answered(async () => await contracts().transact({
    initiator: didOf(body.deployerAddr),
    smartContract: [{ smartContractId: body.smartContractToken, value: body.rbtAmount }],
    ...(body.comment !== undefined ? { memo: body.comment } : {})
  })))
  r.on('legacyExecuteSmartContract', async ({ body }) => await answered(async () => await contracts().transact({
    initiator: didOf(body.executorAddr),
    // an execution keeps the deployed value; the service ignores this one
    smartContract: [{ smartContractId: body.smartContractToken, value: 0, data: body.smartContractData ?? '' }],
    ...(body.comment !== undefined ? { memo: body.comment } : {})
  })))
  r.on('legacySubscribeSmartContract', async ({ body }) => await answered(async () => {
    await contracts().subscribe(body.smartContractToken)
    return ok('Smart contract subscribed successfully', null)
  }))
  r.on('legacyFetchSmartContract', async ({ query }) => await answered(async () => ok((await contracts().fetch(query.smartContractToken)).message, null)))
  r.on('legacyRegisterCallbackUrl', async ({ body }) => await answered(async () => {
    await contracts().registerCallback(body.CallBackURL, body.SmartContractToken)
    return ok('Call back URL registered successfully', null)
  }))
  r.on('legacyGetSmartContractTokenChainData', async ({ body }) => await answered(async () => {
    const chain = await contracts().chain(body.Token)
    if (chain.length === 0) throw new RbtError(ErrorCode.NOT_FOUND, 'Failed to get smart contract token data, token does not exist')
    const rows = chain.map((b, i) => ({ BlockNo: i, BlockId: b.block_id, SmartContractData: b.data, Epoch: b.epoch }))
    return body.Latest === true
      ? withKeys(ok('Fetched latest block smart contract data', null), { SCTDataReply: rows.slice(-1) })
      : withKeys(ok('Fetched Smart contract data', null), { SCTDataReply: rows })
  }, { SCTDataReply: null }))
  r.on('legacyDumpSmartContractTokenChain', async ({ body }) => await answered(async () => {
    const dump = await s.tokens.chain(body.token, body.block_id !== undefined && body.block_id !== '' ? { afterBlockId: body.block_id } : {})
    return withKeys(ok('Successfully got the smart contract token chain block', null), { next_block_id: dump.next_block_id, blocks: dump.blocks.map((b) => b.envelope) })
  }, { next_block_id: '', blocks: null }))
}

import { ok } from '../../../contract/envelope.js'
import type { ApiServices, FtApi } from '../../services.js'
import { ErrorCode, RbtError } from '../../../../util/errors.js'
import type { Registrar } from '../../registrar.js'
import { answered, didOf, withKeys } from './answer.js'

/** The reference's `/api` FT routes (legacy-api.md §6) over the /svc/v1 FT, token and consensus services. */
export function legacyFtRoutes (r: Registrar, s: ApiServices): void {
  const fts = (): FtApi => {
    if (s.fts === undefined) throw new RbtError(ErrorCode.NOT_FOUND, 'FTs are not served by this node')
    return s.fts
  }
  r.on('legacyCreateFt', async ({ body }) => await answered(async () =>
    await fts().mint({ did: body.did, ftName: body.ft_name, ftCount: body.ft_count, tokenCount: body.token_count, startIndex: 0 })))
  r.on('legacyInitiateFtTransfer', async ({ body }) => await answered(async () => {
    const sender = didOf(body.sender)
    const receiver = didOf(body.receiver)
    if (sender === receiver) throw new RbtError(ErrorCode.INVALID_INPUT, 'Sender and receiver cannot be same')
    let creator = body.creatorDID !== undefined && body.creatorDID !== '' ? didOf(body.creatorDID) : undefined
    if (creator === undefined) {
      // as the reference: the creator is implied while the sender holds that name from one creator only
      const creators = [...new Set((await s.tokens.ftBalance(sender)).filter((f) => f.name === body.ft_name).map((f) => f.creator))]
      if (creators.length > 1) throw new RbtError(ErrorCode.INVALID_INPUT, 'There are same FTs with different creators, use -creatorDID flag to specify creatorDID')
      if (creators.length === 0) throw new RbtError(ErrorCode.INSUFFICIENT_BALANCE, `Insufficient FTs: ${sender} holds no free FT named ${body.ft_name}`)
      creator = creators[0] as string
    }
    return await s.consensus.transfer({
      initiator: sender,
      owner: receiver,
      rbt: 0,
      ...(body.comment !== undefined ? { memo: body.comment } : {}),
      hasFt: true,
      referenceMessage: true,
      ft: [{ ftName: body.ft_name, numberOfFts: body.ft_count, creatorDID: creator }]
    })
  }))
  r.on('legacyGetFtInfoByDid', async ({ query }) => await answered(async () => {
    const info = (await s.tokens.ftBalance(query.did)).map((f) => ({ ft_name: f.name, ft_count: f.count, creator_did: f.creator }))
    return withKeys(ok(info.length === 0 ? 'No FTs found' : 'Got FT info successfully', null), { ft_info: info })
  }, { ft_info: null }))
  r.on('legacyGetFtTokenChain', async ({ query }) => await answered(async () => {
    const dump = await s.tokens.chain(query.tokenID, {})
    const blocks = dump.blocks.map(({ envelope: _envelope, ...readable }) => readable)
    return withKeys(ok(blocks.length === 0 ? 'No FT tokenchain data available' : 'FT tokenchain data fetched successfully', null), { TokenChainData: blocks })
  }, { TokenChainData: null }))
  r.on('legacyDumpFtTokenChain', async ({ body }) => await answered(async () => {
    const dump = await s.tokens.chain(body.token, body.block_id !== undefined && body.block_id !== '' ? { afterBlockId: body.block_id } : {})
    return withKeys(ok('Successfully got the token chain block', null), { next_block_id: dump.next_block_id, blocks: dump.blocks.map((b) => b.envelope) })
  }, { next_block_id: '', blocks: null }))
}

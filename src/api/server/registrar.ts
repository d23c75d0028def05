/**
 * How a route module registers its handlers: the one interface between createApp (app.ts) and the
 * route modules under routes/, kept apart so that neither imports the other for it.
 */
import type { Context } from 'hono'
import type { z } from 'zod'
import type { Envelope } from '../contract/envelope.js'
import type { ResultOf, RouteId, routes } from '../contract/routes.js'

type Out<S> = S extends z.ZodType ? z.output<S> : undefined
export interface HandlerInput<R extends RouteId> {
  body: Out<Exclude<(typeof routes)[R]['body' & keyof (typeof routes)[R]], undefined>>
  query: Out<Exclude<(typeof routes)[R]['query' & keyof (typeof routes)[R]], undefined>>
  params: Record<string, string>
  c: Context
}
export type Handler<R extends RouteId> = (input: HandlerInput<R>) => Promise<Envelope<ResultOf<R>>>

/** Registers the handler of one route of the shared table, with validation in front of it. */
export interface Registrar {
  on: <R extends RouteId>(id: R, handler: Handler<R>) => void
}

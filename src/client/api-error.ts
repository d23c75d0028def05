/** A failed API call as the client sees it: the envelope's message, the HTTP status and the error code. */
export class ApiError extends Error {
  constructor (message: string, readonly httpStatus: number, readonly code?: string, readonly result?: unknown) {
    super(message)
    this.name = 'ApiError'
  }
}

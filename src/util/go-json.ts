/** JSON string literal the way Go's encoding/json writes it (HTML-safe escapes included). */
export function goJsonString (s: string): string {
  return JSON.stringify(s)
    .replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029')
}

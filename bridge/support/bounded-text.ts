/**
 * Texts longer than this are cut, in logs and in error answers alike: a
 * function's 10 MB error message must not become a 10 MB log line or answer.
 */
export const MAX_TEXT = 4096

/** `text`, or its first `max` UTF-16 units and "…". */
export const bounded = (text: string, max = MAX_TEXT): string => (text.length <= max ? text : text.slice(0, max) + '…')

/** Escapes LIKE wildcards so user text matches literally (`100%` means 100%). */
export function likePattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** Types of sign-in.js, for tests that import it from Node. */
export function openAs(href: string, userId: string, consoleOrigin: string): string;
export function followUser(userId: string): Promise<boolean>;

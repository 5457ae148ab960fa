export class LuaBuildError extends Error {}
export interface BuiltScript {
  name: string;
  numberOfKeys: number;
  lua: string;
}
export const SHEBANGS: readonly string[];
export function checkShebang(path: string, text: string): void;
export function checkInclude(path: string, text: string): void;
export function checkHeader(path: string, text: string, keys: number): void;
export function buildScripts(dir: string): BuiltScript[];
export function buildPackage(dir: string): boolean;
export function luaPackages(): string[];

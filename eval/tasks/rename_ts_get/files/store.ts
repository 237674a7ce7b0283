const items = new Map<string, string>();

export function get(key: string): string | undefined {
  return items.get(key);
}

export function put(key: string, value: string): void {
  items.set(key, value);
}

import { fetchJson } from "./api";

interface User {
  id: number;
  name: string;
}

fetchJson<User[]>("https://example.com/users").then((users) => {
  for (const u of users) console.log(u.name);
});

import { get, put } from "./store";

put("theme", "dark");
const params = new URLSearchParams("?lang=en");
console.log(get("theme"), params.get("lang"));

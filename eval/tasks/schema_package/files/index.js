const express = require("express");
const app = express();
app.get("/", (req, res) => res.send("notes"));
app.listen(3000);

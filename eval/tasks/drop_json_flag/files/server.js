'use strict';
const config = require('./config.json');

function describe() {
  return `${config.server.host}:${config.server.port} (log ${config.logLevel})`;
}

module.exports = { describe };

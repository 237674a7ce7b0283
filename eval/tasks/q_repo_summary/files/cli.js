#!/usr/bin/env node
'use strict';
const fs = require('fs');
const { convert } = require('./index');

const input = fs.readFileSync(process.argv[2] || 0, 'utf8');
process.stdout.write(JSON.stringify(convert(input), null, 2) + '\n');

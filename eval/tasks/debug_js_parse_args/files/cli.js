'use strict';

function parseArgs(argv) {
  console.log('argv', argv);
  const opts = { name: 'world', verbose: false };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--name') {
      opts.name = argv[++i];
      console.log('name set to', opts.name);
    } else if (argv[i] === '-v') {
      opts.verbose = true;
    }
  }
  console.log('opts', opts);
  return opts;
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  console.log(`hello ${opts.name}`);
}

if (require.main === module) {
  main();
}

module.exports = { parseArgs };

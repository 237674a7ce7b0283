'use strict';

function parseLine(line, sep) {
  return line.split(sep).map((cell) => cell.trim());
}

function convert(text, sep = ',') {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  const header = parseLine(lines[0], sep);
  return lines.slice(1).map((line) => {
    const cells = parseLine(line, sep);
    const row = {};
    header.forEach((key, i) => { row[key] = cells[i]; });
    return row;
  });
}

module.exports = { convert };

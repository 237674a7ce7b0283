'use strict';

function money(amount) {
  return `$${amount.toFixed(2)}`;
}

module.exports = { money };

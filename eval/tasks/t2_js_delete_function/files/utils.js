function formatPrice(n) {
  return n.toFixed(2) + ' EUR';
}

function oldFormat(n) {
  return 'EUR ' + n;
}

module.exports = { formatPrice };

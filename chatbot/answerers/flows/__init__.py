"""The order flows L1 runs, one module each: cancel, change of address, returns and
exchanges, and the general delivery-time answer. Each asks for what is missing and
ends in a confirmation; ``perform`` runs the confirmed action after the shopper's yes."""

"""Export or erase one shopper's personal data (docs/security.md, "Shopper data").

manage.py shopper_data export --customer-id james_li_5688 [--output file.json]
manage.py shopper_data export --email james.li4495@example.com
manage.py shopper_data erase --customer-id james_li_5688 --yes
manage.py shopper_data purge           # apply the retention settings now
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from chatbot.orders.backends import get_order_service
from chatbot.privacy import privacy_purge, shopper_erase, shopper_export


class Command(BaseCommand):
    help = "Export (JSON) or erase one shopper's data, or apply the retention settings."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["export", "erase", "purge"])
        parser.add_argument("--customer-id", default="")
        parser.add_argument("--email", action="append", default=[])
        parser.add_argument("--output", default="", help="export: write here, not stdout")
        parser.add_argument("--yes", action="store_true", help="erase: don't ask")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "purge":
            self.stdout.write(json.dumps(privacy_purge()))
            return
        customer_id, emails = self._shopper(options["customer_id"], options["email"])
        if options["action"] == "export":
            text = json.dumps(
                shopper_export(customer_id=customer_id, emails=emails),
                indent=2,
                ensure_ascii=False,
            )
            if options["output"]:
                Path(options["output"]).write_text(text, encoding="utf-8")
            else:
                self.stdout.write(text)
            return
        if not options["yes"]:
            answer = input(f"Erase all data of {customer_id or emails}? Type 'erase': ")
            if answer.strip() != "erase":
                raise CommandError("nothing erased")
        counts = shopper_erase(customer_id=customer_id, emails=emails)
        self.stdout.write(json.dumps(counts))

    def _shopper(self, customer_id: str, emails: list[str]) -> tuple[str, list[str]]:
        """The customer id and emails to act on; an email alone is looked up."""
        emails = [e.strip().lower() for e in emails if e.strip()]
        if not customer_id and not emails:
            raise CommandError("give --customer-id or --email")
        service = get_order_service()
        if not customer_id:
            for email in emails:
                customer = service.customer_by_email(email=email)
                if customer is not None:
                    customer_id = customer.customer_id
                    break
        elif not emails:
            customer = service.customer_by_id(customer_id=customer_id)
            if customer is not None and customer.email:
                emails = [customer.email.lower()]
        return customer_id, emails

import importlib.util
import sys

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class InferenceConfig(AppConfig):
    name = "inference"
    verbose_name = _("Inference")

    def ready(self) -> None:
        from django.core.signals import setting_changed

        from . import registry

        # Tests swap INFERENCE_BACKENDS with override_settings; drop loaded backends then.
        setting_changed.connect(registry.on_setting_changed)
        absent_modules_mark()


# Optional modules that libraries on our hot paths try to import on every call: httpcore
# (every model request and capacity probe, on the event loop) imports ``sniffio``, thinc
# (every spaCy call in prompt compression) its extra CPU backends. Not installed, each
# try searches every sys.path entry again: 6% of Daphne's event-loop time at 200
# sessions (py-spy).
OPTIONAL_MODULES = ("sniffio", "thinc_apple_ops", "thinc_bigendian_ops")


def absent_modules_mark() -> None:
    """Record each of ``OPTIONAL_MODULES`` that is not installed as absent in
    ``sys.modules`` (None: Python's own mark for "import fails"), so importing it fails
    at once instead of after a search of the path."""
    for name in OPTIONAL_MODULES:
        if name not in sys.modules and importlib.util.find_spec(name) is None:
            sys.modules[name] = None  # type: ignore[assignment]

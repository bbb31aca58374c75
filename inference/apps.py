from django.apps import AppConfig


class InferenceConfig(AppConfig):
    name = "inference"
    verbose_name = "Inference"

    def ready(self) -> None:
        from django.core.signals import setting_changed

        from . import registry

        # Tests swap INFERENCE_BACKENDS with override_settings; drop loaded backends then.
        setting_changed.connect(registry.on_setting_changed)

from django.db import migrations


def seed(apps, schema_editor):
    Plan = apps.get_model("workspaces", "Plan")
    Plan.objects.get_or_create(code="self_hosted", defaults={"name": "Self-hosted"})


class Migration(migrations.Migration):
    dependencies = [("workspaces", "0001_initial")]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]

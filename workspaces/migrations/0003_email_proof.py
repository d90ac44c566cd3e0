# E-mail proof: every column arrives nullable or with a database default (the previous release
# inserts users and invitations without them); no backfill.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('workspaces', '0002_seed_self_hosted_plan'),
    ]

    operations = [
        migrations.AddField(
            model_name='invitation',
            name='delivery',
            field=models.CharField(choices=[('email', 'Email'), ('manual', 'Manual')], db_default='manual', default='manual', max_length=8),
        ),
        migrations.AddField(
            model_name='user',
            name='email_verified_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='user',
            name='session_epoch',
            field=models.IntegerField(db_default=0, default=0, editable=False),
        ),
        migrations.AlterField(
            model_name='accessauditevent',
            name='action',
            field=models.CharField(choices=[('invitation.created', 'Invitation Created'), ('invitation.resent', 'Invitation Resent'), ('invitation.revoked', 'Invitation Revoked'), ('invitation.accepted', 'Invitation Accepted'), ('member.added', 'Member Added'), ('member.role_changed', 'Member Role Changed'), ('member.deactivated', 'Member Deactivated'), ('member.reactivated', 'Member Reactivated'), ('member.removed', 'Member Removed'), ('repost_grant.created', 'Repost Grant Created'), ('repost_grant.revoked', 'Repost Grant Revoked'), ('account.email_verified', 'Account Email Verified')], max_length=40),
        ),
    ]
